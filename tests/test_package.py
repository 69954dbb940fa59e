import subprocess
import sys

import geosynth


def test_import_is_lazy_so_the_cli_can_catch_ctrl_c_while_libraries_load():
    code = (
        "import sys, geosynth, geosynth.cli\n"
        "heavy = [m for m in ('numpy', 'numba', 'geopandas', 'pyogrio', 'folium') "
        "if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == ""


def test_python_dash_m_geosynth_is_the_command():
    # Where the console script is not on the PATH (a venv not activated): "No module named
    # geosynth.__main__".
    result = subprocess.run([sys.executable, "-m", "geosynth", "--help"], capture_output=True,
                            text=True, check=True)
    assert result.stdout.startswith("Usage: geosynth [OPTIONS] COMMAND")
    assert "release" in result.stdout and "evaluate" in result.stdout


def test_every_public_name_resolves_and_all_is_complete():
    for name in geosynth.__all__:
        assert getattr(geosynth, name) is not None
    assert set(dir(geosynth)) >= set(geosynth.__all__)
    assert geosynth.Grid is geosynth.lattice.Grid
    # The one-call shortcut dispatches to the core (geosynth.synth) or to geosynth.dp.
    assert geosynth.synthesize is geosynth._shortcuts.synthesize
