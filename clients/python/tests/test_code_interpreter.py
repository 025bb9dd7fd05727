"""Issue 28's code-interpreter loop through the Python client: a CSV in, a pandas group-by
and a matplotlib chart in a session, the chart back as an image and as a workspace file,
the derived CSV back, and the files the code wrote listed in the result."""
import importlib.util

import pytest

import tidepool

SALES = "region,amount\nnorth,10\nsouth,5\nnorth,7\neast,3\nsouth,1\n"
BY_REGION = "region,amount\neast,3\nnorth,17\nsouth,6\n"
PNG = b"\x89PNG\r\n\x1a\n"
MISSING = [m for m in ("numpy", "pandas", "matplotlib") if importlib.util.find_spec(m) is None]


@pytest.mark.skipif(bool(MISSING), reason="not installed: %s (make deps)" % ", ".join(MISSING))
def test_csv_in_group_by_chart_and_csv_out():
    with tidepool.Client(args=["--policy", "data"]) as c, c.session(policy="data") as s:
        if s.workspace is None:
            pytest.skip("no Landlock on this kernel: sessions get no workspace")
        assert s.put_file("sales.csv", SALES) == len(SALES)
        r = s.run("import pandas as pd\nimport matplotlib.pyplot as plt\n"
                  "df = pd.read_csv('sales.csv')\n"
                  "g = df.groupby('region')['amount'].sum().reset_index()\n"
                  "g.to_csv('by_region.csv', index=False)\n"
                  "g.plot(kind='bar', x='region', y='amount')\nplt.savefig('chart.png')\ng",
                  timeout=60)
        assert r.ok, r.error
        assert r.value == [{"region": "east", "amount": 3}, {"region": "north", "amount": 17},
                           {"region": "south", "amount": 6}]
        assert len(r.images) == 1 and r.images[0].mime == "image/png"
        assert r.images[0].data.startswith(PNG)
        chart = s.get_file("chart.png")
        assert chart.startswith(PNG)
        assert r.files == r.raw["files"] == [
            {"path": "by_region.csv", "size": len(BY_REGION), "mime": "text/csv",
             "change": "created"},
            {"path": "chart.png", "size": len(chart), "mime": "image/png", "change": "created"}]
        assert s.get_file("by_region.csv").decode() == BY_REGION
        # the next exec that changes nothing lists nothing
        r = s.run("len(g)")
        assert "files" not in r.raw and r.files == []
