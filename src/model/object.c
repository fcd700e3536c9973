/*
 * object.c — accessors that read a field of an object without caring
 * whether it (or its parents) exist: missing or mistyped gives the
 * fallback.  Objects are borrowed; returned strings live as long as obj.
 */
#include "model/model.h"

#include <string.h>

const json_t *obj_at(const json_t *obj, const char *dotted_path)
{
	const char *p = dotted_path;

	if (!p)
		return NULL;
	while (obj) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (!json_is_object(obj))
			return NULL;
		obj = json_object_getn(obj, p, n);
		if (!dot)
			return obj;
		p = dot + 1;
	}
	return NULL;
}

const char *obj_str(const json_t *obj, const char *dotted_path)
{
	return json_string_value(obj_at(obj, dotted_path));
}

json_int_t obj_int(const json_t *obj, const char *dotted_path, json_int_t fallback)
{
	const json_t *j = obj_at(obj, dotted_path);

	return json_is_integer(j) ? json_integer_value(j) : fallback;
}

const char *obj_kind(const json_t *obj)
{
	return obj_str(obj, "kind");
}

const char *obj_name(const json_t *obj)
{
	return obj_str(obj, "metadata.name");
}

const char *obj_namespace(const json_t *obj)
{
	const char *ns = obj_str(obj, "metadata.namespace");

	return ns ? ns : "";
}

const char *obj_view_name(struct jval obj)
{
	return jval_path_str(obj, "metadata.name");
}

const char *obj_view_namespace(struct jval obj)
{
	const char *ns = jval_path_str(obj, "metadata.namespace");

	return ns ? ns : "";
}
