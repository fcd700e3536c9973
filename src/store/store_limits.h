/*
 * store_limits.h — bounds on what the store accepts, shared by store.c
 * (which checks them once for every back-end) and the back-ends (which size
 * buffers by them).  Private to src/store; callers see only the -E2BIG.
 */
#ifndef WEFT_STORE_LIMITS_H
#define WEFT_STORE_LIMITS_H

#define STORE_KEY_MAX		4096		/* bytes, without the NUL */
#define STORE_VALUE_MAX		(8u << 20)	/* bytes */
#define STORE_TXN_MAX_CMPS	1024
#define STORE_TXN_MAX_OPS	65536		/* per branch */

#endif
