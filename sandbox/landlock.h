/*
 * landlock.h — the Landlock UAPI constants tidepool needs, defined locally.
 * Debian 12's <linux/landlock.h> stops at ABI 2; the running kernel may have more.
 * Every definition is #ifndef-guarded so a newer header wins.
 *
 * Usage: include after <linux/landlock.h>; build a struct tp_landlock_attr with
 * the rights the probed ABI knows (tp_landlock_*_for_abi) and pass its size.
 */
#ifndef TP_LANDLOCK_H
#define TP_LANDLOCK_H

#include <linux/landlock.h>
#include <stdint.h>
#include <sys/syscall.h>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

/* ABI 1: bits 0..12 (EXECUTE .. MAKE_SYM) are in every header we build with. */
#define TP_LANDLOCK_FS_ABI1 ((1ULL << 13) - 1)
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13) /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#endif

/* ABI 4: TCP bind and connect. */
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif

/* ABI 6: IPC scopes. */
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

#define TP_LL_FS(bit) (1ULL << (bit))
#ifndef LANDLOCK_ACCESS_FS_WRITE_FILE
#define LANDLOCK_ACCESS_FS_WRITE_FILE TP_LL_FS(1)
#define LANDLOCK_ACCESS_FS_READ_FILE TP_LL_FS(2)
#define LANDLOCK_ACCESS_FS_READ_DIR TP_LL_FS(3)
#define LANDLOCK_ACCESS_FS_REMOVE_DIR TP_LL_FS(4)
#define LANDLOCK_ACCESS_FS_REMOVE_FILE TP_LL_FS(5)
#define LANDLOCK_ACCESS_FS_MAKE_DIR TP_LL_FS(7)
#define LANDLOCK_ACCESS_FS_MAKE_REG TP_LL_FS(8)
#endif
#ifndef LANDLOCK_RULE_PATH_BENEATH
#define LANDLOCK_RULE_PATH_BENEATH 1
#endif

/* struct landlock_path_beneath_attr, packed as the UAPI has it. */
struct tp_landlock_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

/* The ABI 6+ layout of struct landlock_ruleset_attr. Older kernels accept the
 * larger size as long as the fields they do not know are zero. */
struct tp_landlock_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* Every filesystem right the given ABI knows (pinned: ABI 7 is the newest we know). */
static inline uint64_t tp_landlock_fs_for_abi(int abi)
{
	uint64_t fs = TP_LANDLOCK_FS_ABI1;

	if (abi >= 2)
		fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return abi >= 1 ? fs : 0;
}

static inline uint64_t tp_landlock_net_for_abi(int abi)
{
	return abi >= 4 ? LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP : 0;
}

static inline uint64_t tp_landlock_scoped_for_abi(int abi)
{
	return abi >= 6 ? LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL : 0;
}

#endif
