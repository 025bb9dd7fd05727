#!/usr/bin/python3
"""Runs a command under what a unit's [Service] hardening directives do, as far as
that can be done without systemd as PID 1 (this project's machines run none).

    harden.py UNIT [--logs-dir DIR] -- COMMAND [ARGS...]
    harden.py UNIT [--logs-dir DIR] --wrapper PATH -- COMMAND
        (writes PATH: a script that runs COMMAND "$@" so; for a test suite's $TIDEPOOL)

Root only. Each directive in EMULATED is done with the kernel interface systemd
uses for it (namespaces, mounts, prctl, a seccomp filter made with libseccomp,
the capability bounding set), then COMMAND is exec'd as root, as the service's
ExecStart is. It is an emulation: the rules below follow systemd 252's
documentation, not systemd itself (the differences are said where they are).
--logs-dir DIR: LogsDirectory= is DIR, seen as /var/log/NAME (a tmpfs hides the
real /var/log inside the namespace), so a test writes nothing outside DIR.
Every directive of the unit's [Service] section must be in EMULATED, NOT_EMULATED
or SETTINGS, or this refuses to run (a new directive is then considered here).
"""
import ctypes
import errno
import os
import re
import shutil
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                       ctypes.c_char_p]

# ---- what the unit says ------------------------------------------------------------


def parse_service(path):
    """[Service]'s directives: {name: [values, in order]}."""
    out, section = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
            elif section == "Service":
                k, _, v = line.partition("=")
                out.setdefault(k.strip(), []).append(v.strip())
    return out


def value(unit, name, default=None):
    v = unit.get(name)
    return v[-1] if v else default


def yes(unit, name):
    return value(unit, name, "no").lower() in ("yes", "true", "on", "1")


# Not restrictions: how the service is started, logged and stopped.
SETTINGS = {"Type", "ExecStart", "StandardInput", "StandardOutput", "StandardError",
            "SuccessExitStatus", "TimeoutStopSec", "LogsDirectoryMode", "KillMode"}

# Directives this cannot do, and why (contrib/README.md repeats them).
NOT_EMULATED = {
    "IPAddressDeny": "a cgroup BPF program that only systemd attaches; under PrivateNetwork= "
                     "there is no IP traffic to deny anyway",
}

# ---- namespaces and mounts -----------------------------------------------------------

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET = 0x20000, 0x04000000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME, MS_STRICTATIME = 1024, 2048, 1 << 21, 1 << 24
PER_MOUNT = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
             "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}


def check(rc, what):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


def mount(src, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    check(libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)),
          f"mount {src} {target} {fstype} {flags:#x}")


def mountinfo():
    """[(mount point, its per-mount flags)], parents before children."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            mp = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])
            flags = 0
            for o in parts[5].split(","):
                flags |= PER_MOUNT.get(o, 0)
            out.append((mp, flags))
    return out


def under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def remount_ro(roots, skip=()):
    """Every mount at or beneath one of roots read-only, but those under skip."""
    for mp, flags in mountinfo():
        if under(mp, roots) and not under(mp, skip):
            try:
                mount(None, mp, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
            except OSError as e:
                if e.errno not in (errno.ENOENT, errno.EACCES):
                    raise


def bind_self(path):
    mount(path, path, None, MS_BIND | MS_REC)


def inaccessible(path):
    """What systemd does to a directory it hides: empty, and no one may enter."""
    if os.path.isdir(path):
        mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=000")
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def private_devices():
    """A /dev of null, zero, full, random, urandom, tty, an empty shm and pts."""
    mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC | MS_STRICTATIME, "mode=755")
    for name, minor_dev in (("null", (1, 3)), ("zero", (1, 5)), ("full", (1, 7)),
                            ("random", (1, 8)), ("urandom", (1, 9)), ("tty", (5, 0))):
        os.mknod(f"/dev/{name}", 0o20666, os.makedev(*minor_dev))
        os.chmod(f"/dev/{name}", 0o666)
    for d in ("shm", "pts", "mqueue", "hugepages"):
        os.mkdir(f"/dev/{d}", 0o755)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{name}")
    mount(None, "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC | MS_STRICTATIME,
          "mode=755")


def filesystem(unit, logs_dir):
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing below leaves this namespace
    rw = []
    for name in unit.get("LogsDirectory", []):
        for n in name.split():
            target = f"/var/log/{n}"
            if logs_dir:
                if not os.path.isdir(target):
                    mount("tmpfs", "/var/log", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
                    os.mkdir(target)
                mount(logs_dir, target, None, MS_BIND)
            else:
                os.makedirs(target, exist_ok=True)
                bind_self(target)
            os.chmod(target, int(value(unit, "LogsDirectoryMode", "0755"), 8))
            rw.append(target)
    for v in unit.get("ReadWritePaths", []):
        for p in v.split():
            p = p.lstrip("-")
            if os.path.exists(p):
                bind_self(p)
                rw.append(p)
    # (after the binds above: a --logs-dir may be under the real /tmp)
    if yes(unit, "PrivateTmp"):
        for d in ("/tmp", "/var/tmp"):
            mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
            rw.append(d)
    if yes(unit, "PrivateDevices"):
        private_devices()
    if value(unit, "ProtectHome", "no") == "yes":
        for d in ("/home", "/root", "/run/user"):
            inaccessible(d)
    elif value(unit, "ProtectHome", "no") == "read-only":
        remount_ro(["/home", "/root", "/run/user"])
    if yes(unit, "ProtectKernelModules"):
        for d in ("/usr/lib/modules", "/lib/modules"):
            if os.path.isdir(d) and not os.path.islink(d):
                inaccessible(d)
    if value(unit, "ProtectProc", "default") != "default" or \
            value(unit, "ProcSubset", "all") != "all":
        opts = []
        if value(unit, "ProtectProc", "default") != "default":
            opts.append(f"hidepid={value(unit, 'ProtectProc')}")
        if value(unit, "ProcSubset", "all") == "pid":
            opts.append("subset=pid")
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, ",".join(opts))
    if yes(unit, "ProtectKernelLogs"):
        for p in ("/proc/kmsg", "/dev/kmsg"):
            if os.path.exists(p):  # (systemd binds an inaccessible file; this, an empty one)
                mount("/dev/null", p, None, MS_BIND)
    if yes(unit, "ProtectKernelTunables"):
        paths = [p for p in ("/proc/sys", "/proc/sysrq-trigger", "/proc/latency_stats",
                             "/proc/acpi", "/proc/timer_stats", "/proc/asound", "/proc/bus",
                             "/proc/fs", "/proc/irq", "/sys") if os.path.exists(p)]
        for p in paths:
            bind_self(p)
        remount_ro(paths)
    if yes(unit, "ProtectControlGroups"):
        remount_ro(["/sys/fs/cgroup"])
    if value(unit, "ProtectSystem") == "strict":
        remount_ro(["/"], skip=["/proc", "/sys", "/dev"] + rw)
    elif value(unit, "ProtectSystem") in ("yes", "full"):
        remount_ro(["/usr", "/boot", "/efi"] + (["/etc"] if value(unit, "ProtectSystem") == "full"
                                                else []))


# ---- seccomp ---------------------------------------------------------------------------

class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64),
                ("b", ctypes.c_uint64)]


NE, EQ, MASKED_EQ = 1, 4, 7
ALLOW = 0x7fff0000


def ERRNO(e):
    return 0x00050000 | e


class Filter:
    def __init__(self):
        self.lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
        self.lib.seccomp_init.restype = ctypes.c_void_p
        self.lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                                    ctypes.c_uint, ctypes.POINTER(ArgCmp)]
        self.lib.seccomp_load.argtypes = [ctypes.c_void_p]
        self.lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
        # Native architecture only (SystemCallArchitectures=native): any other is killed.
        self.ctx = self.lib.seccomp_init(ALLOW)
        self.rules = 0

    def add(self, action, name, *cmps):
        nr = self.lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return  # not a call of this architecture
        arr = (ArgCmp * max(1, len(cmps)))(*[ArgCmp(*c) for c in cmps])
        rc = self.lib.seccomp_rule_add_array(self.ctx, action, nr, len(cmps), arr)
        if rc != 0:
            raise OSError(-rc, f"seccomp_rule_add({name}, {cmps}): {os.strerror(-rc)}")
        self.rules += 1

    def deny(self, *names, e=errno.EPERM):
        for n in names:
            self.add(ERRNO(e), n)

    def load(self):
        rc = self.lib.seccomp_load(self.ctx)
        if rc != 0:
            raise OSError(-rc, f"seccomp_load: {os.strerror(-rc)}")


def expand_syscalls(names, seen=None):
    """System call names of a SystemCallFilter= list, its @groups as systemd-analyze
    syscall-filter lists them."""
    import subprocess
    seen = set() if seen is None else seen
    out = []
    for n in names:
        if not n.startswith("@"):
            out.append(n)
        elif n not in seen:
            seen.add(n)
            exe = shutil.which("systemd-analyze") or shutil.which("systemd-analyze",
                                                                   path="/usr/bin:/bin")
            if exe is None:
                raise SystemExit(f"harden.py: SystemCallFilter={n} needs systemd-analyze to "
                                 "list the group's calls (Debian: systemd)")
            r = subprocess.run([exe, "syscall-filter", n], capture_output=True, text=True,
                               check=True)
            members = [x.strip() for x in r.stdout.splitlines()[1:]
                       if x.strip() and not x.strip().startswith("#")]
            out += expand_syscalls(members, seen)
    return out


PROT_WRITE, PROT_EXEC, SHM_EXEC = 2, 4, 0o100000
S_ISUID, S_ISGID, O_CREAT = 0o4000, 0o2000, 0o100
NS_FLAGS = (0x20000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x80)
FAMILIES = {"AF_UNIX": 1, "AF_LOCAL": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16,
            "AF_PACKET": 17}


def seccomp(unit):
    f = Filter()
    if yes(unit, "MemoryDenyWriteExecute"):
        # systemd 252 (seccomp_memory_deny_write_execute): W+X maps, and making
        # anything executable afterwards.
        f.add(ERRNO(errno.EPERM), "mmap", (2, MASKED_EQ, PROT_WRITE | PROT_EXEC,
                                           PROT_WRITE | PROT_EXEC))
        f.add(ERRNO(errno.EPERM), "mprotect", (2, MASKED_EQ, PROT_EXEC, PROT_EXEC))
        f.add(ERRNO(errno.EPERM), "pkey_mprotect", (2, MASKED_EQ, PROT_EXEC, PROT_EXEC))
        f.add(ERRNO(errno.EPERM), "shmat", (2, MASKED_EQ, SHM_EXEC, SHM_EXEC))
    fams = value(unit, "RestrictAddressFamilies")
    if fams and fams != "none" and not fams.startswith("~"):
        allowed = sorted({FAMILIES[x] for x in fams.split()})
        if allowed != [1]:
            raise SystemExit(f"harden.py: RestrictAddressFamilies={fams}: only AF_UNIX is emulated")
        f.add(ERRNO(errno.EAFNOSUPPORT), "socket", (0, NE, 1, 0))
    if yes(unit, "RestrictNamespaces"):
        for flag in NS_FLAGS:
            f.add(ERRNO(errno.EPERM), "unshare", (0, MASKED_EQ, flag, flag))
            f.add(ERRNO(errno.EPERM), "clone", (0, MASKED_EQ, flag, flag))
        f.deny("setns")
        f.deny("clone3", e=errno.ENOSYS)  # its flags are in memory: systemd refuses it whole
    if yes(unit, "RestrictRealtime"):
        for policy in (1, 2, 6):  # SCHED_FIFO, SCHED_RR, SCHED_DEADLINE
            f.add(ERRNO(errno.EPERM), "sched_setscheduler", (1, EQ, policy, 0))
        f.deny("sched_setattr")  # (systemd checks its policy; tidepool calls neither)
    if yes(unit, "LockPersonality"):
        # (stricter than systemd, which also lets the query 0xffffffff through)
        f.add(ERRNO(errno.EPERM), "personality", (0, NE, 0, 0))
    if yes(unit, "RestrictSUIDSGID"):
        for bit in (S_ISUID, S_ISGID):
            for name, arg in (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("mkdir", 1),
                              ("mkdirat", 2), ("mknod", 1), ("mknodat", 2), ("creat", 1)):
                f.add(ERRNO(errno.EPERM), name, (arg, MASKED_EQ, bit, bit))
            f.add(ERRNO(errno.EPERM), "open", (1, MASKED_EQ, O_CREAT, O_CREAT),
                  (2, MASKED_EQ, bit, bit))
            f.add(ERRNO(errno.EPERM), "openat", (2, MASKED_EQ, O_CREAT, O_CREAT),
                  (3, MASKED_EQ, bit, bit))
    if yes(unit, "ProtectClock"):
        f.deny("clock_settime", "settimeofday", "clock_adjtime", "adjtimex")
    if yes(unit, "ProtectKernelModules"):
        f.deny("init_module", "finit_module", "delete_module")
    if yes(unit, "ProtectKernelLogs"):
        f.deny("syslog")
    if yes(unit, "ProtectHostname"):
        f.deny("sethostname", "setdomainname")
    if yes(unit, "PrivateDevices"):
        f.deny("ioperm", "iopl", "pciconfig_iobase", "pciconfig_read", "pciconfig_write")
    for v in unit.get("SystemCallFilter", []):
        if not v.startswith("~"):
            raise SystemExit("harden.py: only SystemCallFilter=~... (a deny list) is emulated")
        for name in expand_syscalls(v[1:].split()):
            f.add(ERRNO(errno.EPERM), name)
    if value(unit, "SystemCallArchitectures", "native") != "native":
        raise SystemExit("harden.py: only SystemCallArchitectures=native is emulated")
    f.load()  # (libseccomp sets no_new_privs first)


# ---- capabilities ------------------------------------------------------------------------

CAPS = ("CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP "
        "LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER "
        "SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE "
        "SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP "
        "MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF "
        "CHECKPOINT_RESTORE").split()
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38


def bounding_set(unit):
    """The capability numbers CapabilityBoundingSet= keeps, or None for all."""
    v = value(unit, "CapabilityBoundingSet")
    if v is None:
        return None
    keep = {CAPS.index(c.removeprefix("CAP_")) for c in v.split()}
    return keep


def drop_caps(keep, last):
    for cap in range(last + 1):
        if cap not in keep:
            check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"PR_CAPBSET_DROP {cap}")


# ---- the lot -------------------------------------------------------------------------------

EMULATED = {
    "CapabilityBoundingSet": "prctl(PR_CAPBSET_DROP) of every other capability, then exec as root",
    "LogsDirectory": "the directory, made and bound writable in the mount namespace",
    "UMask": "umask(2)",
    "NoNewPrivileges": "prctl(PR_SET_NO_NEW_PRIVS)",
    "ProtectSystem": "every mount but /proc, /sys, /dev and the writable paths remounted read-only",
    "ReadWritePaths": "bound onto itself before the read-only remount",
    "PrivateTmp": "a tmpfs on /tmp and /var/tmp",
    "ProtectHome": "an empty mode-000 read-only tmpfs on /home, /root, /run/user",
    "PrivateDevices": "a tmpfs /dev with null, zero, full, random, urandom, tty; @raw-io refused",
    "PrivateNetwork": "a network namespace, its loopback up",
    "PrivateIPC": "an IPC namespace",
    "RestrictAddressFamilies": "seccomp: socket() of another family is EAFNOSUPPORT",
    "RestrictNamespaces": "seccomp: unshare/clone with a CLONE_NEW* flag and setns EPERM, "
                          "clone3 ENOSYS",
    "ProtectKernelTunables": "/proc/sys, /sys and others read-only",
    "ProtectKernelModules": "/usr/lib/modules hidden; init/finit/delete_module EPERM",
    "ProtectKernelLogs": "/proc/kmsg hidden; syslog(2) EPERM",
    "ProtectControlGroups": "/sys/fs/cgroup read-only",
    "ProtectProc": "a new procfs mount with hidepid=",
    "ProcSubset": "the same mount with subset=pid",
    "ProtectClock": "seccomp: clock_settime, settimeofday, clock_adjtime, adjtimex EPERM",
    "ProtectHostname": "a UTS namespace; sethostname, setdomainname EPERM",
    "RestrictRealtime": "seccomp: sched_setscheduler(SCHED_FIFO/RR/DEADLINE) EPERM",
    "RestrictSUIDSGID": "seccomp: chmod/mkdir/mknod/open(O_CREAT) with S_ISUID or S_ISGID EPERM",
    "LockPersonality": "seccomp: personality(2) other than PER_LINUX EPERM",
    "SystemCallArchitectures": "seccomp: a filter for x86-64 alone, any other architecture killed",
    "MemoryDenyWriteExecute": "seccomp: mmap W+X, mprotect/pkey_mprotect +X, shmat SHM_EXEC EPERM",
    "SystemCallFilter": "seccomp: each call of the deny list EPERM (groups from systemd-analyze)",
    "PrivateMounts": "the mount namespace, its propagation private",
}


def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    cmd = argv[argv.index("--") + 1:]
    opts = argv[1:argv.index("--")]
    unit_path, logs_dir, wrapper = opts[0], None, None
    i = 1
    while i < len(opts):
        if opts[i] == "--logs-dir":
            logs_dir, i = os.path.abspath(opts[i + 1]), i + 2
        elif opts[i] == "--wrapper":
            wrapper, i = opts[i + 1], i + 2
        else:
            sys.exit(f"harden.py: unknown option {opts[i]}")
    unit = parse_service(unit_path)
    unknown = sorted(set(unit) - set(EMULATED) - set(NOT_EMULATED) - SETTINGS)
    if unknown:
        sys.exit(f"harden.py: {unit_path}: not emulated and not explained: {', '.join(unknown)}")
    if wrapper:
        args = [os.path.abspath(__file__), os.path.abspath(unit_path)] + \
            (["--logs-dir", logs_dir] if logs_dir else []) + ["--", *cmd]
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec /usr/bin/python3 " +
                    " ".join("'" + a.replace("'", "'\\''") + "'" for a in args) + ' "$@"\n')
        os.chmod(wrapper, 0o755)
        return 0
    if os.geteuid() != 0:
        sys.exit("harden.py: run it as root (it makes namespaces and mounts, as systemd does)")

    with open("/proc/sys/kernel/cap_last_cap") as f:  # (before ProcSubset=pid hides it)
        last_cap = int(f.read())
    flags = CLONE_NEWNS
    if yes(unit, "PrivateNetwork"):
        flags |= CLONE_NEWNET
    if yes(unit, "ProtectHostname"):
        flags |= CLONE_NEWUTS
    if yes(unit, "PrivateIPC"):
        flags |= CLONE_NEWIPC
    check(libc.unshare(flags), "unshare")
    if flags & CLONE_NEWNET:  # systemd brings the namespace's loopback up
        import fcntl
        import socket
        import struct
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sk:
            ifr = fcntl.ioctl(sk, 0x8913, struct.pack("16sH14x", b"lo", 0))  # SIOCGIFFLAGS
            up = struct.unpack("16sH14x", ifr)[1] | 1  # IFF_UP
            fcntl.ioctl(sk, 0x8914, struct.pack("16sH14x", b"lo", up))  # SIOCSIFFLAGS
    filesystem(unit, logs_dir)
    if value(unit, "UMask"):
        os.umask(int(value(unit, "UMask"), 8))
    if yes(unit, "NoNewPrivileges"):
        check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    seccomp(unit)
    keep = bounding_set(unit)
    if keep is not None:
        drop_caps(keep, last_cap)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
