"""The data loop on a session's workspace files (issue 28, part 1): pandas read_csv /
read_table / read_json and to_csv / to_json, numpy load / save (.npy, never pickle) and
savefig (PNG, SVG, PDF) on paths in the workspace, confined by the file shim's checks
(policy_violation at the language layer: rule filesystem.read / filesystem.write and the
path) and by Landlock (a symlink planted in the workspace that leads out:
sandbox_violation at the kernel, rule landlock:<right>). Every escape is shown to have
read nothing and written nothing outside the workspace. One-shot execs (no workspace)
still refuse a path. Skipped where python3-numpy/-pandas/-matplotlib are not installed
or the kernel has no Landlock (no workspaces)."""
import base64
import json
import os
import pickle
import shutil
import tempfile

import numpy
import pytest

try:
    import openpyxl  # noqa: F401  (Debian's python3-openpyxl: make deps installs it)
    EXCEL = True
except ImportError:
    EXCEL = False
needs_excel = pytest.mark.skipif(not EXCEL, reason="python3-openpyxl is not installed "
                                 "(make deps installs it)")

from conftest import PV, Host, needs_data, needs_landlock, ok, said

pytestmark = [needs_data, needs_landlock]

SALES = b"region,month,amount\nN,1,10\nS,1,5\nN,2,7\nS,2,1\nE,2,4\n"
NO_WS = ("is refused: files are in a session's workspace, and this exec has none "
         "(policy data: open a session, or pass an io.StringIO or io.BytesIO)")


@pytest.fixture(scope="module")
def host():
    h = Host()
    yield h
    h.close()


@pytest.fixture
def outside():
    """A directory outside every workspace, with a file no exec may read or change."""
    d = tempfile.mkdtemp(prefix="tp-data-outside-", dir="/tmp")
    with open(os.path.join(d, "secret.csv"), "w") as f:
        f.write("secret,CANARY\n1,2\n")
    yield d
    assert sorted(os.listdir(d)) == ["secret.csv"], os.listdir(d)
    with open(os.path.join(d, "secret.csv")) as f:
        assert f.read() == "secret,CANARY\n1,2\n"
    shutil.rmtree(d, ignore_errors=True)


class Session:
    def __init__(self, h):
        self.h = h
        r = h.call("sandbox/session/open", {"lang": "python", "policy": "data"})["result"]
        self.sid, self.ws = r["session_id"], r["workspace"]["path"]
        self.base = os.path.dirname(self.ws)
        self.around = sorted(os.listdir(self.base))

    def put(self, path, data):
        r = self.h.call("sandbox/session/files/put", {"session_id": self.sid, "path": path,
                                                       "data": base64.b64encode(data).decode()})
        assert r["result"]["bytes"] == len(data), r

    def get(self, path):
        r = self.h.call("sandbox/session/files/get", {"session_id": self.sid, "path": path})
        assert "result" in r, r
        return base64.b64decode(r["result"]["data"])

    def files(self):
        r = self.h.call("sandbox/session/files/list", {"session_id": self.sid})["result"]
        return sorted(f["path"] for f in r["files"])

    def ex(self, code):
        r = self.h.call("sandbox/exec", {"session_id": self.sid, "code": code}, timeout=90)
        assert "result" in r, r
        assert "CANARY" not in json.dumps(r), r  # nothing outside was read
        return r["result"]

    def close(self):
        # nothing was made beside the workspace (a '..' that got through)
        assert sorted(os.listdir(self.base)) == self.around
        self.h.call("sandbox/session/close", {"session_id": self.sid})


@pytest.fixture
def s(host):
    sess = Session(host)
    sess.put("sales.csv", SALES)
    yield sess
    sess.close()


def refused(res, message, rule, path):
    """The language layer's refusal, with exactly this message, rule and path."""
    assert res["ok"] is False, res
    e = res["error"]
    assert (e["kind"], e["layer"], e["type"], said(e), e["rule"], e.get("path")) == (
        PV, "language", "PolicyViolation", message, rule, path), res
    assert e["policy"] == "data", res


def kernel(res, right, path):
    """Landlock's refusal of the shim's own open of path."""
    assert res["ok"] is False, res
    e = res["error"]
    assert (e["kind"], e["layer"], e["rule"], e["path"]) == (
        "sandbox_violation", "kernel", "landlock:" + right, path), res
    assert said(e) == ("the kernel refused open(%r): Permission denied (EACCES); Landlock "
                       "allows no file outside the policy's grants" % path), res


# -- the loop: a file in, a derived file and a chart out --------------------------------

def test_the_data_loop_in_a_session(s):
    r = s.ex("import pandas as pd, matplotlib.pyplot as plt\n"
             "df = pd.read_csv('sales.csv')\n"
             "g = df.groupby('region', as_index=False)['amount'].sum()\n"
             "g.to_csv('by_region.csv', index=False)\n"
             "g.to_json('by_region.json', orient='records')\n"
             "df.amount.to_csv('amounts.csv')\n"
             "ax = g.plot.bar(x='region', y='amount', title='Sales by region')\n"
             "for ext in ('png', 'svg', 'pdf'):\n"
             "    plt.savefig('chart.' + ext)\n"
             "plt.gcf().savefig('untyped')\n"
             "g.to_dict('records')")
    ok(r, [{"region": "E", "amount": 4}, {"region": "N", "amount": 17},
           {"region": "S", "amount": 6}])
    assert s.get("by_region.csv") == b"region,amount\nE,4\nN,17\nS,6\n"
    assert json.loads(s.get("by_region.json")) == r["value"]
    assert s.get("amounts.csv") == b",amount\n0,10\n1,5\n2,7\n3,1\n4,4\n"
    png = s.get("chart.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    assert s.get("chart.svg").startswith(b"<?xml") and b"<svg" in s.get("chart.svg")
    pdf = s.get("chart.pdf")
    assert pdf.startswith(b"%PDF-1.4") and pdf.rstrip().endswith(b"%%EOF")
    assert b"DejaVuSans" in pdf  # the title's font, embedded from the bytes the zygote read
    assert s.get("untyped.png")[:4] == b"\x89PNG"  # as matplotlib names it
    assert s.files() == ["amounts.csv", "by_region.csv", "by_region.json", "chart.pdf",
                         "chart.png", "chart.svg", "sales.csv", "untyped.png"]
    # the next exec reads what this one wrote
    ok(s.ex("import pandas as pd\npd.read_json('by_region.json').amount.sum().item()"), 27)


def test_reads_take_paths_files_and_text(s):
    ok(s.ex("import pandas as pd, pathlib\n"
            "a = pd.read_csv(pathlib.Path('sales.csv'))\n"
            "with open('sales.csv') as f:\n"
            "    b = pd.read_csv(f)\n"
            "c = pd.read_table('sales.csv', sep=',', engine='python')\n"
            "d = pd.read_json('[{\"x\": 1}, {\"x\": 2}]')\n"  # JSON text, not a path
            "n = sum(len(ch) for ch in pd.read_csv('sales.csv', chunksize=2))\n"
            "[len(a), a.equals(b), a.equals(c), d.x.sum().item(), n]"), [5, True, True, 3, 5])
    # to_csv's mode='a' appends; Series.to_json; a second read sees both
    ok(s.ex("import pandas as pd\n"
            "pd.DataFrame({'a': [1]}).to_csv('log.csv', index=False)\n"
            "pd.DataFrame({'a': [2]}).to_csv('log.csv', mode='a', header=False, index=False)\n"
            "pd.Series([1, 2], name='s').to_json(path_or_buf='s.json')\n"
            "[pd.read_csv('log.csv').a.tolist(), pd.read_json('s.json', typ='series').tolist()]"),
       [[1, 2], [1, 2]])


def _workbook(sheets):
    """An .xlsx of {sheet name: DataFrame}, made by Debian's openpyxl here."""
    import io
    import pandas
    b = io.BytesIO()
    with pandas.ExcelWriter(b, engine="openpyxl") as w:
        for name, df in sheets.items():
            df.to_excel(w, sheet_name=name, index=False)
    return b.getvalue()


@needs_excel
def test_excel_in_and_out(s):
    import io
    import pandas
    s.put("book.xlsx", _workbook({
        "sales": pandas.DataFrame({"region": ["N", "S", "N"], "amount": [10, 5, 7]}),
        "notes": pandas.DataFrame({"note": ["ok"]})}))
    r = s.ex("import pandas as pd\n"
             "book = pd.read_excel('book.xlsx', sheet_name=None)\n"
             "t = book['sales'].groupby('region', as_index=False)['amount'].sum()\n"
             "t.to_excel('totals.xlsx', sheet_name='totals', index=False)\n"
             "[sorted(book), pd.read_excel('book.xlsx', sheet_name='notes').note.tolist(),\n"
             " pd.read_excel('totals.xlsx').to_dict('records')]")
    ok(r, [["notes", "sales"], ["ok"],
           [{"region": "N", "amount": 17}, {"region": "S", "amount": 5}]])
    assert r["files"] == [{"path": "totals.xlsx", "size": len(s.get("totals.xlsx")),
                           "mime": "application/vnd.openxmlformats-officedocument."
                                   "spreadsheetml.sheet", "change": "created"}], r
    # What the snippet wrote is a workbook any reader opens: its sheet and rows.
    back = pandas.read_excel(io.BytesIO(s.get("totals.xlsx")), sheet_name=None)
    assert list(back) == ["totals"]
    assert back["totals"].to_dict("records") == [{"region": "N", "amount": 17},
                                                 {"region": "S", "amount": 5}]
    assert s.files() == ["book.xlsx", "sales.csv", "totals.xlsx"]


@needs_excel
def test_an_entity_bomb_in_a_workbook_is_the_parsers_error(s):
    """A sheet whose XML expands entities a billion-fold: expat's amplification
    limit stops it (the sheets are read by the C ElementTree over expat, never
    lxml), as the snippet's runtime error, within its memory."""
    import io
    import zipfile
    import pandas
    book = _workbook({"s": pandas.DataFrame({"a": [1]})})
    ents = '<!ENTITY l0 "lol">' + "".join(
        '<!ENTITY l%d "%s">' % (i, ("&l%d;" % (i - 1)) * 10) for i in range(1, 10))
    sheet = ('<?xml version="1.0"?><!DOCTYPE lolz [%s]><worksheet xmlns="http://schemas.'
             'openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" '
             't="inlineStr"><is><t>&l9;</t></is></c></row></sheetData></worksheet>' % ents)
    zin, out = zipfile.ZipFile(io.BytesIO(book)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as zout:
        for it in zin.infolist():
            data = zin.read(it.filename)
            zout.writestr(it, sheet.encode() if it.filename == "xl/worksheets/sheet1.xml"
                          else data)
    s.put("bomb.xlsx", out.getvalue())
    r = s.ex("import pandas as pd\npd.read_excel('bomb.xlsx')")
    assert r["ok"] is False, r
    e = r["error"]
    assert (e["kind"], e["layer"], e["type"]) == ("runtime_error", "language", "ParseError"), r
    assert e["message"].startswith("limit on input amplification factor (from DTD and "
                                   "entities) breached"), r
    assert r["usage"]["memory_peak_bytes"] < 256 << 20, r


@needs_excel
def test_excel_without_a_workspace_is_in_memory_only(host):
    r = host.call("sandbox/exec", {"lang": "python", "policy": "data", "code":
                  "import io, pandas as pd\n"
                  "b = io.BytesIO()\n"
                  "pd.DataFrame({'a': [1, 2]}).to_excel(b, index=False)\n"
                  "pd.read_excel(io.BytesIO(b.getvalue())).a.tolist()"}, timeout=90)
    ok(r["result"], [1, 2])
    r = host.call("sandbox/exec", {"lang": "python", "policy": "data",
                                   "code": "import pandas as pd\npd.read_excel('b.xlsx')"})
    refused(r["result"], "pandas.read_excel('b.xlsx') %s" % NO_WS, "filesystem.read",
            "b.xlsx")


def test_numpy_npy_round_trip_without_pickle(s):
    ok(s.ex("import numpy as np\n"
            "np.save('a.npy', np.arange(6).reshape(2, 3))\n"
            "np.save('b', np.array([1.5, 2.5]))\n"  # numpy adds .npy
            "[np.load('a.npy').tolist(), np.load('b.npy').tolist()]"),
       [[[0, 1, 2], [3, 4, 5]], [1.5, 2.5]])
    assert s.get("a.npy")[:6] == b"\x93NUMPY"
    assert numpy.load(os.path.join(s.ws, "a.npy")).tolist() == [[0, 1, 2], [3, 4, 5]]
    # an array holding Python objects would be pickled: refused before any file is made
    refused(s.ex("import numpy as np\nnp.save('o.npy', np.array([{}, 1], dtype=object))"),
            "numpy.save('o.npy') is refused: an array holding Python objects is saved with "
            "pickle (policy data: no pickle)", "python.function:numpy.save", None)
    assert "o.npy" not in s.files()
    refused(s.ex("import numpy as np\nnp.load('a.npy', allow_pickle=True)"),
            "numpy.load('a.npy') is refused: allow_pickle runs the pickles a file holds "
            "(policy data: no pickle)", "python.function:numpy.load", None)
    refused(s.ex("import numpy as np\nnp.load('a.npy', mmap_mode='r')"),
            "numpy.load('a.npy') is refused: mmap_mode maps the file into memory (policy data: "
            "no memory maps)", "filesystem.read", "a.npy")
    # a file holding a pickle (put by the client) is never unpickled
    s.put("obj.npy", _npy_with_object())
    s.put("plain.pkl", pickle.dumps([1, 2]))
    for name, message in [("obj.npy", "Object arrays cannot be loaded when allow_pickle=False"),
                          ("plain.pkl", "Cannot load file containing pickled data when "
                                        "allow_pickle=False")]:
        r = s.ex("import numpy as np\nnp.load(%r)" % name)
        assert (r["ok"], r["error"]["type"], r["error"]["message"]) == (
            False, "ValueError", message), r
    # .npz archives (zip) and savez stay refused
    s.put("z.npz", b"PK\x03\x04" + b"\0" * 40)
    refused(s.ex("import numpy as np\nnp.load('z.npz')"),
            "numpy.load('z.npz') is refused: an .npz archive is not available (policy data: "
            "save each array with numpy.save)", "python.function:numpy.load", None)
    refused(s.ex("import numpy as np\nnp.savez('z2.npz', a=np.zeros(2))"),
            "numpy.savez is not available in the sandbox (policy data: no files)",
            "python.function:numpy.savez", None)


def _npy_with_object():
    import io
    b = io.BytesIO()
    numpy.save(b, numpy.array([{"a": 1}], dtype=object), allow_pickle=True)
    return b.getvalue()


# -- escapes: each refused, nothing outside read or written -----------------------------

READS = [
    ("pandas.read_csv", "import pandas as pd\npd.read_csv({p!r})"),
    ("pandas.read_json", "import pandas as pd\npd.read_json({p!r})"),
    ("numpy.load", "import numpy as np\nnp.load({p!r})"),
    pytest.param("pandas.read_excel", "import pandas as pd\npd.read_excel({p!r})",
                 marks=needs_excel),
]
WRITES = [
    ("DataFrame.to_csv", "import pandas as pd\npd.DataFrame({{'a': [1]}}).to_csv({p!r})"),
    ("Series.to_json", "import pandas as pd\npd.Series([1]).to_json({p!r})"),
    ("numpy.save", "import numpy as np\nnp.save({p!r}, np.zeros(2))"),
    ("matplotlib.pyplot.savefig", "import matplotlib.pyplot as plt\nplt.plot([1])\n"
                                  "plt.savefig({p!r})"),
    ("Figure.savefig", "import matplotlib.pyplot as plt\nplt.figure().savefig({p!r})"),
    pytest.param("DataFrame.to_excel",
                 "import pandas as pd\npd.DataFrame({{'a': [1]}}).to_excel({p!r})",
                 marks=needs_excel),
]


def _outside_paths(s, outside):
    """(as the code names it, the normalized path the refusal names)."""
    rel = os.path.relpath(os.path.join(outside, "secret.csv"), s.ws)
    return [
        (os.path.join(outside, "secret.csv"),) * 2,
        (rel, os.path.join(outside, "secret.csv")),  # ../../tp-data-outside-*/secret.csv
        ("../secret.csv", os.path.join(s.base, "secret.csv")),
        ("sub/../../secret.csv", os.path.join(s.base, "secret.csv")),
        ("/proc/self/environ",) * 2,
        ("/etc/passwd",) * 2,
    ]


def _ids(cases):
    return [c.values[0] if hasattr(c, "values") else c[0] for c in cases]


@pytest.mark.parametrize("qual,code", READS, ids=_ids(READS))
def test_reads_outside_the_workspace_are_refused(s, outside, qual, code):
    for p, norm in _outside_paths(s, outside):
        refused(s.ex(code.format(p=p)), "%s(%r) is refused: outside the policy's file grants "
                "(policy data)" % (qual, p), "filesystem.read", norm)


@pytest.mark.parametrize("qual,code", WRITES, ids=_ids(WRITES))
def test_writes_outside_the_workspace_are_refused(s, outside, qual, code):
    for p, norm in _outside_paths(s, outside):
        if qual == "numpy.save":
            p, norm = p + ".npy", norm + ".npy"  # as numpy names it
        if qual.endswith("savefig") and not os.path.splitext(p)[1]:
            p, norm = p + ".png", norm + ".png"  # as matplotlib names it
        refused(s.ex(code.format(p=p)), "%s(%r) is refused: outside the policy's write grants "
                "(policy data)" % (qual, p), "filesystem.write", norm)
    assert s.files() == ["sales.csv"]


URLS = ["http://example.com/sales.csv", "https://example.com/a.csv", "file:///etc/passwd",
        "file:/etc/passwd", "s3://bucket/sales.csv", "gcs://b/x.csv"]


@pytest.mark.parametrize("url", URLS)
def test_urls_are_refused_in_and_out_of_a_session(host, s, url):
    msg = "is refused: a URL is not a file in the workspace (policy data: no network)"
    refused(s.ex("import pandas as pd\npd.read_csv(%r)" % url),
            "pandas.read_csv(%r) %s" % (url, msg), "filesystem.read", url)
    refused(s.ex("import pandas as pd\npd.DataFrame({'a': [1]}).to_json(%r)" % url),
            "DataFrame.to_json(%r) %s" % (url, msg), "filesystem.write", url)
    r = host.call("sandbox/exec", {"lang": "python", "policy": "data",
                                   "code": "import pandas as pd\npd.read_csv(%r)" % url})
    refused(r["result"], "pandas.read_csv(%r) %s" % (url, msg), "filesystem.read", url)


OPTIONS = [
    ("pd.read_csv('sales.csv', storage_options={'anon': True})", "pandas.read_csv('sales.csv')",
     "storage_options name a remote file system (policy data: no network)", "read"),
    ("pd.read_csv('sales.csv', compression='gzip')", "pandas.read_csv('sales.csv')",
     "compression is not available (policy data: read and write files uncompressed)", "read"),
    ("pd.read_csv('sales.csv.gz')", "pandas.read_csv('sales.csv.gz')",
     "compression is not available (policy data: read and write files uncompressed)", "read"),
    ("pd.read_json('x.json', compression={'method': 'zip'})", "pandas.read_json('x.json')",
     "compression is not available (policy data: read and write files uncompressed)", "read"),
    ("pd.read_csv('sales.csv', memory_map=True)", "pandas.read_csv('sales.csv')",
     "memory_map maps the file into memory (policy data: no memory maps)", "read"),
    ("pd.read_csv('sales.csv', engine='pyarrow')", "pandas.read_csv('sales.csv')",
     "engine 'pyarrow' is not available (policy data: the C and Python parsers only)", "read"),
    ("pd.DataFrame({'a': [1]}).to_csv('o.csv.zip')", "DataFrame.to_csv('o.csv.zip')",
     "compression is not available (policy data: read and write files uncompressed)", "write"),
    ("pd.DataFrame({'a': [1]}).to_csv('o.csv', compression='bz2')", "DataFrame.to_csv('o.csv')",
     "compression is not available (policy data: read and write files uncompressed)", "write"),
    ("pd.DataFrame({'a': [1]}).to_json('o.json', storage_options={})",
     "DataFrame.to_json('o.json')",
     "storage_options name a remote file system (policy data: no network)", "write"),
    pytest.param("pd.read_excel('sales.xlsx', engine='xlrd')", "pandas.read_excel('sales.xlsx')",
                 "engine 'xlrd' is not available (policy data: engine 'openpyxl' only)",
                 "read", marks=needs_excel),
    pytest.param("pd.read_excel('sales.xlsx', storage_options={})",
                 "pandas.read_excel('sales.xlsx')",
                 "storage_options name a remote file system (policy data: no network)", "read",
                 marks=needs_excel),
    pytest.param("pd.DataFrame({'a': [1]}).to_excel('o.xlsx', engine='xlsxwriter')",
                 "DataFrame.to_excel('o.xlsx')",
                 "engine 'xlsxwriter' is not available (policy data: engine 'openpyxl' only)",
                 "write", marks=needs_excel),
]


@pytest.mark.parametrize("code,call,why,rw", OPTIONS, ids=_ids(OPTIONS))
def test_remote_compressed_mapped_and_native_options_are_refused(s, code, call, why, rw):
    path = call.split("'")[1]
    refused(s.ex("import pandas as pd\n" + code), "%s is refused: %s" % (call, why),
            "filesystem." + rw, path)
    assert s.files() == ["sales.csv"]


def test_savefig_formats_and_backends(s):
    refused(s.ex("import matplotlib.pyplot as plt\nplt.plot([1])\nplt.savefig('c.jpg')"),
            "matplotlib.pyplot.savefig('c.jpg') is refused: format 'jpg' is not available "
            "(policy data: png, svg or pdf)", "python.function:matplotlib.pyplot.savefig", None)
    refused(s.ex("import matplotlib.pyplot as plt\nplt.figure().savefig('c.pdf', backend='pgf')"),
            "Figure.savefig('c.pdf') is refused: backend 'pgf' is not available (policy data: "
            "only the Agg backend)", "python.function:Figure.savefig", None)
    refused(s.ex("import matplotlib.pyplot as plt\nplt.figure().savefig('c.svgz')"),
            "Figure.savefig('c.svgz') is refused: format 'svgz' is not available "
            "(policy data: png, svg or pdf)", "python.function:Figure.savefig", None)
    assert s.files() == ["sales.csv"]


def test_a_nul_byte_or_bytes_path_is_an_error_as_in_cpython(s):
    for code, typ, msg in [
        ("import pandas as pd\npd.read_csv('sales.csv\\0x')", "ValueError",
         "pandas.read_csv: embedded null byte"),
        ("import numpy as np\nnp.save('a\\0.npy', np.zeros(1))", "ValueError",
         "numpy.save: embedded null byte"),
        ("import pandas as pd\npd.read_csv(b'/etc/passwd')", "TypeError",
         "pandas.read_csv: a path must be a str or a pathlib.Path, not bytes"),
    ]:
        r = s.ex(code)
        assert (r["ok"], r["error"]["kind"], r["error"]["type"], r["error"]["message"]) == (
            False, "runtime_error", typ, msg), r
    assert s.files() == ["sales.csv"]


def test_a_pathlike_is_read_once(s):
    # __fspath__ answers the workspace file first and /etc/passwd after: the shim
    # takes the path once, checks it and opens it itself, so the second answer is
    # never asked for; the other way round is refused.
    cls = ("class P:\n"
           "    n = 0\n"
           "    def __init__(self, *ps): self.ps = ps\n"
           "    def __fspath__(self):\n"
           "        P.n += 1\n"
           "        return self.ps[min(P.n, len(self.ps)) - 1]\n")
    ok(s.ex("import pandas as pd\n" + cls +
            "df = pd.read_csv(P('sales.csv', '/etc/passwd'))\n[len(df), P.n]"), [5, 1])
    ok(s.ex("import numpy as np\n" + cls +
            "np.save(P('t.npy', '/tmp/tp-escape.npy'), np.zeros(1))\nP.n"), 1)
    assert not os.path.exists("/tmp/tp-escape.npy")
    refused(s.ex("import pandas as pd\n" + cls + "pd.read_csv(P('/etc/passwd', 'sales.csv'))"),
            "pandas.read_csv('/etc/passwd') is refused: outside the policy's file grants "
            "(policy data)", "filesystem.read", "/etc/passwd")


def test_a_file_like_object_never_hands_its_descriptor_to_native_code(s):
    # An object of the snippet's that says its fileno() is 1 (stdout) or 2: PIL would
    # write the PNG to that descriptor itself, numpy's save to a real file calls
    # tofile. The shim renders into memory and hands the object only write().
    r = s.ex("import numpy as np, matplotlib.pyplot as plt\n"
             "class Sink:\n"
             "    def __init__(self): self.parts = []\n"
             "    def fileno(self): return 1\n"
             "    def write(self, b): self.parts.append(b); return len(b)\n"
             "    def flush(self): pass\n"
             "a, b = Sink(), Sink()\n"
             "plt.plot([1, 2]); plt.savefig(a)\n"
             "np.save(b, np.arange(3))\n"
             "[a.parts[0][:4] == b'\\x89PNG', b.parts[0][:6] == b'\\x93NUMPY']")
    ok(r, [True, True])
    assert r["stdout"] == "" and r["stderr"] == "", r
    # a file the code's own open() returned (a workspace file) works as well
    ok(s.ex("import numpy as np, matplotlib.pyplot as plt\n"
            "with open('f.npy', 'wb') as f:\n"
            "    np.save(f, np.arange(3))\n"
            "with open('f.npy', 'rb') as f:\n"
            "    x = np.load(f).tolist()\n"
            "with open('f.svg', 'w') as f:\n"
            "    plt.figure().savefig(f, format='svg')\n"
            "x"), [0, 1, 2])
    assert s.get("f.svg").startswith(b"<?xml")


def test_a_symlink_planted_in_the_workspace_meets_landlock(s, outside):
    os.symlink(os.path.join(outside, "secret.csv"), os.path.join(s.ws, "link.csv"))
    os.symlink(outside, os.path.join(s.ws, "dir"))
    link, new = os.path.join(s.ws, "link.csv"), os.path.join(s.ws, "dir", "new.csv")
    kernel(s.ex("import pandas as pd\npd.read_csv('link.csv')"), "read_file", link)
    kernel(s.ex("import pandas as pd\npd.read_csv('dir/secret.csv')"), "read_file",
           os.path.join(s.ws, "dir", "secret.csv"))
    kernel(s.ex("import numpy as np\nnp.load('link.csv')"), "read_file", link)
    kernel(s.ex("import pandas as pd\npd.DataFrame({'a': [1]}).to_csv('link.csv')"),
           "make_reg", link)
    kernel(s.ex("import pandas as pd\npd.DataFrame({'a': [1]}).to_csv('dir/new.csv')"),
           "make_reg", new)
    kernel(s.ex("import matplotlib.pyplot as plt\nplt.figure().savefig('dir/new.png')"),
           "make_reg", os.path.join(s.ws, "dir", "new.png"))
    # catching the error does not help: the refusal is sticky
    kernel(s.ex("import pandas as pd\ntry:\n    pd.read_csv('link.csv')\nexcept OSError:\n"
                "    pass\n'read'"), "read_file", link)
    os.remove(os.path.join(s.ws, "link.csv"))
    os.remove(os.path.join(s.ws, "dir"))


def test_a_one_shot_exec_refuses_a_path(host):
    def run(code):
        r = host.call("sandbox/exec", {"lang": "python", "policy": "data", "code": code},
                      timeout=90)
        assert "result" in r, r
        return r["result"]
    for code, call, rw, path in [
        ("import pandas as pd\npd.read_csv('sales.csv')", "pandas.read_csv('sales.csv')",
         "read", "sales.csv"),
        ("import pandas as pd\npd.DataFrame({'a': [1]}).to_csv('o.csv')",
         "DataFrame.to_csv('o.csv')", "write", "o.csv"),
        ("import numpy as np\nnp.save('o', np.zeros(1))", "numpy.save('o.npy')", "write",
         "o.npy"),
        ("import matplotlib.pyplot as plt\nplt.plot([1])\nplt.savefig('c.png')",
         "matplotlib.pyplot.savefig('c.png')", "write", "c.png"),
    ]:
        refused(run(code), "%s %s" % (call, NO_WS), "filesystem." + rw, path)
    # in memory, as before
    ok(run("import io, numpy as np, pandas as pd\n"
           "b = io.BytesIO(); np.save(b, np.arange(2)); b.seek(0)\n"
           "[np.load(b).tolist(), pd.read_csv(io.StringIO('a\\n1\\n')).a.tolist()]"),
       [[0, 1], [1]])
