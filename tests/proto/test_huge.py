"""The Python zygote's memory in 2 MiB pages (sandbox/huge.c), read from
outside in /proc: its code and constants are the binary's own bytes at the
binary's own addresses, in anonymous huge pages with the segments' own
protections (never writable), and its heap and arenas are collapsed too. A
worker inherits all of it and runs as before (every other test)."""
import ctypes
import mmap
import os
import struct

import pytest

from conftest import Host, assert_healthy

BLOCK = 2 << 20
MADV_COLLAPSE = 25


def can_collapse():
    """MADV_COLLAPSE on a block of this process's own: Linux 6.1 with
    transparent huge pages. Where it is refused, huge.c moves nothing."""
    libc = ctypes.CDLL(None, use_errno=True)
    m = mmap.mmap(-1, 2 * BLOCK, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    a = (addr + BLOCK - 1) & ~(BLOCK - 1)
    ctypes.memset(a, 1, BLOCK)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    ok = libc.madvise(ctypes.c_void_p(a), BLOCK, MADV_COLLAPSE) == 0
    err = ctypes.get_errno()
    return ok, os.strerror(err)


PT_LOAD, PT_GNU_RELRO = 1, 0x6474e552


def page_up(a):
    return (a + 4095) & ~4095


def block_up(a):
    return (a + BLOCK - 1) & ~(BLOCK - 1)


def load_segments(path, want=PT_LOAD):
    """(vaddr, offset, filesz, memsz, flags) of each program header of type
    want in a 64-bit ELF file, and the file."""
    with open(path, "rb") as f:
        elf = f.read()
    assert elf[:4] == b"\x7fELF" and elf[4] == 2
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    segs = []
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", elf, phoff + i * phentsize)
        if p_type == want:
            segs.append((p_vaddr, p_offset, p_filesz, p_memsz, p_flags))
    return elf, segs


def mappings(pid):
    """{start: (end, perms, path, AnonHugePages kB)} from /proc/PID/smaps."""
    out, cur = {}, None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and ":" not in head[0]:
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                cur = lo
                out[lo] = [hi, head[1], head[5] if len(head) > 5 else "", 0]
            elif head[0] == "AnonHugePages:" and cur is not None:
                out[cur][3] = int(head[1])
    return out


@pytest.fixture(scope="module")
def python_zygote():
    """(host, the Python zygote's pid, its binary)."""
    h = Host()
    try:
        assert_healthy(h)
        r = h.call("sandbox/exec", {"lang": "python", "code": "sum(range(10))"})
        assert r["result"]["value"] == 45, r
        zs = [(z, os.readlink(f"/proc/{z}/exe")) for z in h.zygotes()]
        py = [(z, exe) for z, exe in zs if exe.endswith("tidepool-python")]
        # The host runs Python in its own binary when tidepool-python is not
        # beside it (make test-sanitize builds none).
        yield (h,) + (py[0] if py else zs[-1])
    finally:
        h.close()


@pytest.fixture(scope="module")
def zygote(python_zygote):
    h, z, exe = python_zygote
    if not exe.endswith("tidepool-python"):
        pytest.skip(f"the Python zygote runs the host's own binary ({exe}), "
                    "which is not linked for huge.c to move")
    with open(f"/proc/{z}/maps") as f:
        if "libasan" in f.read():
            pytest.skip("an AddressSanitizer build: huge.c moves nothing under it")
    return h, z


def test_code_and_constants_are_the_binarys_own_in_huge_pages(zygote):
    ok, why = can_collapse()
    if not ok:
        pytest.skip(f"this kernel refuses MADV_COLLAPSE ({why}): huge.c leaves the "
                    "program's segments and the heap in 4 KiB pages")
    h, z = zygote
    exe = os.readlink(f"/proc/{z}/exe")
    elf, segs = load_segments(exe)
    maps = mappings(z)
    moved = 0
    for vaddr, off, filesz, memsz, flags in segs:
        if flags & 2 or memsz < BLOCK // 2:  # writable, or too small to move
            continue
        assert vaddr % BLOCK == 0, hex(vaddr)  # the Makefile's -z max-page-size
        end = (vaddr + memsz + BLOCK - 1) & ~(BLOCK - 1)
        hi, perms, path, huge_kb = maps[vaddr]
        if path == exe and not can_collapse()[0]:
            # It collapsed a block a moment ago and cannot now: out of free
            # 2 MiB pages (fragmented memory); huge.c then leaves the segment.
            pytest.skip("MADV_COLLAPSE now refused: the segments stayed the file's")
        want = "r" + "-" + ("x" if flags & 1 else "-") + "p"
        assert (hi, perms, path) == (end, want, ""), (hex(vaddr), maps[vaddr])
        assert huge_kb == (end - vaddr) // 1024, (hex(vaddr), huge_kb)
        try:
            with open(f"/proc/{z}/mem", "rb") as mem:
                mem.seek(vaddr)
                got = mem.read(memsz)
        except OSError as e:
            pytest.skip(f"cannot read the zygote's memory here ({e}); its layout was checked")
        assert got == elf[off:off + filesz], hex(vaddr)
        moved += 1
    assert moved == 2  # the code and the constants
    # The writable data past RELRO (.data, CPython's runtime, .bss): moved too,
    # unless something lies in its rounding up (the heap, when the kernel puts
    # the program break right after it).
    _, relro = load_segments(exe, PT_GNU_RELRO)
    (wv, _, _, wmem, _), = [g for g in segs if g[4] & 2]
    lo, end = page_up(relro[0][0] + relro[0][3]), page_up(wv + wmem)
    assert lo % BLOCK == 0, hex(lo)
    hi, perms, path, huge_kb = maps[lo]
    if path == exe:
        assert any(a < block_up(end) and b[0] > end for a, b in maps.items()), \
            "the writable data was not moved, and nothing was in its way"
    else:
        assert (hi, perms, path, huge_kb) == (block_up(end), "rw-p", "", (block_up(end) - lo) // 1024)
    # The heap and the arenas: at least three blocks more, all read-write.
    rw_huge = sum(v[3] for v in maps.values() if v[1] == "rw-p")
    assert rw_huge >= 3 * 2048, rw_huge


def test_nothing_the_zygote_maps_is_writable_and_executable(python_zygote):
    _, z, _ = python_zygote
    for lo, (hi, perms, path, _) in mappings(z).items():
        assert not ("w" in perms and "x" in perms), (hex(lo), perms, path)
