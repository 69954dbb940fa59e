"""geosynth.tune with a public weights raster: placement, the cells' exposure and reuse."""

from __future__ import annotations

import pickle
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import shapely

import geosynth
import geosynth.synth
from geosynth import tuning as tuning_module
from geosynth.datasets import paiva_scenario
from geosynth.errors import InputError, PrivacyLeakWarning
from geosynth.tuning import Candidate
from tests.synth.helpers import from_origin, write_raster
from tests.test_tuning import ATTRIBUTES, QUICK, _no_candidate_may_run, _tune

CELL = 2_500.0  # a 4x4 lattice over the scenario's 10 km square
PIXEL = CELL / 2


@pytest.fixture(scope="module")
def scenario():
    return paiva_scenario(n=300, seed=5)  # test_tuning.py's records: its _tune's settings fit


@pytest.fixture(scope="module")
def region(scenario):
    return shapely.box(*scenario.bounds)


@pytest.fixture(scope="module")
def pixels():
    """8 x 8 pixels over the 4 x 4 cells: weight in the western pixels of each cell only."""
    values = np.random.default_rng(3).uniform(1.0, 9.0, size=(8, 8))
    values[:, 1::2] = 0.0
    return values


@pytest.fixture(scope="module")
def raster(tmp_path_factory, scenario, pixels):
    west, _, _, north = scenario.bounds
    path = tmp_path_factory.mktemp("weights") / "people.tif"
    return write_raster(path, pixels, from_origin(west, north, PIXEL, PIXEL),
                        crs=scenario.data.crs)


@pytest.fixture(scope="module")
def recorded(scenario, region, raster):
    """A tuning with the raster, and what each candidate's synthesize got and returned."""
    calls = {}
    synthesize = geosynth.synth.synthesize

    def recording(fit, gdf, **kwargs):
        releases = synthesize(fit, gdf, **kwargs)
        calls[fit.counts.grid.exposure_source] = (fit.counts.grid, kwargs["weights"], releases)
        return releases

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(geosynth.synth, "synthesize", recording)
        tuning = _tune(scenario, region, [Candidate(shape=(4, 4)),
                                          Candidate(shape=(4, 4), weights_exposure=True)],
                       weights=raster)
    return tuning, calls


def test_the_raster_places_every_candidates_points_in_its_positive_pixels(scenario, recorded):
    tuning, calls = recorded
    assert list(tuning.table.index) == ["4x4", "4x4, weights exposure"]
    assert len(calls) == 2
    west = scenario.bounds[0]
    for _, _, releases in calls.values():
        for release in releases:
            x = shapely.get_coordinates(release.geometry)[:, 0]
            assert len(x) == len(scenario.data)
            # Every point in the western half of its cell, where the raster's weight is.
            assert np.all((x - west) % CELL < PIXEL)
    # The records themselves are not: the placement is the raster's, not the data's.
    x = shapely.get_coordinates(scenario.data.geometry)[:, 0]
    assert np.mean((x - west) % CELL < PIXEL) < 0.7


def test_weights_exposure_makes_the_cells_totals_the_exposure(scenario, recorded, pixels):
    _, calls = recorded
    plain, _, _ = calls["habitable fraction"]
    grid, table, _ = calls["weights raster"]
    assert not plain.exposure_given
    assert grid.exposure_given and grid.same_cells(plain)
    assert table.grid.same_cells(grid)
    # Each pixel lies in one cell: a cell's total is the sum of the pixels whose centre it holds.
    west, _, _, north = scenario.bounds
    rows, cols = np.indices(pixels.shape)
    centres = np.column_stack([west + (cols.ravel() + 0.5) * PIXEL,
                               north - (rows.ravel() + 0.5) * PIXEL])
    totals = np.bincount(grid.locate(centres), weights=pixels.ravel(), minlength=grid.n_cells)
    assert np.all(totals > 0)
    np.testing.assert_allclose(grid.exposure / grid.exposure[0], totals / totals[0], rtol=1e-9)


def test_the_same_raster_is_reused_and_another_refused(scenario, region, raster, pixels,
                                                       tmp_path, monkeypatch):
    first = _tune(scenario, region, [(4, 4)], weights=raster)
    ran = []
    run = tuning_module.run_candidate
    monkeypatch.setattr(tuning_module, "run_candidate",
                        lambda *a, **k: ran.append(a[1].label) or run(*a, **k))
    again = _tune(scenario, region, [(4, 4), (8, 8)], weights=str(raster), previous=first)
    assert ran == ["8x8"]
    assert again.table.loc["4x4", "true_match_rate"] == first.table.loc["4x4",
                                                                          "true_match_rate"]
    other = write_raster(tmp_path / "other.tif", pixels[::-1],
                         from_origin(*scenario.bounds[::3], PIXEL, PIXEL), crs=scenario.data.crs)
    with pytest.raises(InputError, match="previous was made with other weights"):
        _tune(scenario, region, [(4, 4)], weights=other, previous=first)
    with pytest.raises(InputError, match="previous was made with other weights"):
        _tune(scenario, region, [(4, 4)], previous=first)
    import rasterio

    with rasterio.open(raster) as dataset:  # what is read counts, not how it was given
        _tune(scenario, region, [(4, 4)], weights=dataset, previous=first)
    assert ran == ["8x8"]


def test_previous_sees_a_change_in_the_file_a_vrt_reads(scenario, region, pixels, tmp_path):
    import rasterio.shutil

    transform = from_origin(*scenario.bounds[::3], PIXEL, PIXEL)
    source = write_raster(tmp_path / "source.tif", pixels, transform, crs=scenario.data.crs)
    vrt = tmp_path / "people.vrt"
    rasterio.shutil.copy(source, vrt, driver="VRT")
    first = _tune(scenario, region, [(4, 4)], weights=vrt)
    write_raster(source, pixels[::-1], transform, crs=scenario.data.crs)  # the VRT is unchanged
    with pytest.raises(InputError, match=r"previous was made with other weights \(candidate "
                                         r"'4x4' read another raster over its lattice\)"):
        _tune(scenario, region, [(4, 4)], weights=vrt, previous=first)


def test_weights_are_checked_before_any_candidate_runs(scenario, region, raster, tmp_path,
                                                       monkeypatch):
    _no_candidate_may_run(monkeypatch)
    exposed = Candidate(shape=(4, 4), weights_exposure=True)
    with pytest.raises(InputError, match=r"'4x4, weights exposure' has weights_exposure=True "
                                         r"but tune\(\) got no weights= raster"):
        _tune(scenario, region, [(8, 8), exposed])
    with pytest.raises(InputError, match=r"fit_options may not set \['weights'\]"):
        _tune(scenario, region, [{"shape": (4, 4), "epsilon": 1.0}],
              fit_options={**QUICK, "weights": raster})
    elsewhere = write_raster(tmp_path / "elsewhere.tif", np.ones((2, 2)),
                             from_origin(0.0, 100.0, 10.0, 10.0), crs=scenario.data.crs)
    with pytest.raises(InputError, match="does not overlap") as caught:
        _tune(scenario, region, [(4, 4)], weights=elsewhere)
    assert "candidate '4x4'" in "\n".join(caught.value.__notes__)
    with pytest.raises(InputError, match="weights"):
        _tune(scenario, region, [(4, 4)], weights=tmp_path / "missing.tif")


def test_a_candidate_gets_one_exposure(region):
    with pytest.raises(TypeError, match="weights_exposure must be"):
        Candidate(shape=(4, 4), weights_exposure="yes")
    areas = geosynth.Grid.regular(region.bounds, shape=(2, 2), crs="EPSG:31983")
    counted = geosynth.Grid.from_polygons(areas.cells, exposure="area")
    with pytest.raises(InputError, match=r"has an exposure already \(habitable area\); give"):
        Candidate(grid=counted, weights_exposure=True)
    # The settings of a candidate without the exposure are those it had before it existed.
    assert Candidate(shape=(4, 4)).settings == (None, (4, 4), "attribute", None, None)
    assert Candidate(shape=(4, 4), weights_exposure=True).settings[-1] == ("weights_exposure",
                                                                            True)


def test_a_raster_made_from_the_records_is_warned_about(scenario, region, tmp_path,
                                                        monkeypatch):
    monkeypatch.setattr(tuning_module, "run_candidate",
                        lambda *a, **k: pytest.fail("the warning comes before any fit"))
    west, south, east, north = scenario.bounds
    size = 50.0
    values = np.zeros((int((north - south) / size), int((east - west) / size)))
    xy = shapely.get_coordinates(scenario.data.geometry)
    rows = ((north - xy[:, 1]) // size).astype(int)
    cols = ((xy[:, 0] - west) // size).astype(int)
    values[rows, cols] = 1.0
    made = write_raster(tmp_path / "records.tif", values, from_origin(west, north, size, size),
                        crs=scenario.data.crs)
    with pytest.warns(PrivacyLeakWarning, match="^candidate '4x4': the weights raster's pixels "
                                                "of positive weight"):
        with pytest.raises(pytest.fail.Exception, match="before any fit"):
            geosynth.tune(scenario.data, ATTRIBUTES, [(4, 4)], region=region,
                          fit_options=QUICK, m=2, seed=1, progress=False, weights=made)


def test_cells_the_raster_counts_nobody_in_are_named_with_their_candidate(
        scenario, region, pixels, tmp_path, monkeypatch):
    monkeypatch.setattr(tuning_module, "run_candidate",
                        lambda *a, **k: pytest.fail("the warning comes before any fit"))
    empty_west = pixels.copy()
    empty_west[:, :2] = 0.0  # the raster counts nobody in the 4 western cells
    path = write_raster(tmp_path / "people.tif", empty_west,
                        from_origin(*scenario.bounds[::3], PIXEL, PIXEL), crs=scenario.data.crs)
    with pytest.warns(geosynth.errors.DataWarning) as caught:
        with pytest.raises(pytest.fail.Exception, match="before any fit"):
            geosynth.tune(scenario.data, ATTRIBUTES,
                          [(4, 4), Candidate(shape=(4, 4), weights_exposure=True)],
                          region=region, fit_options=QUICK, m=2, seed=1, progress=False,
                          weights=path)
    floors = [str(w.message) for w in caught if "floor" in str(w.message)]
    assert floors == ["candidate '4x4, weights exposure': cell_exposure raised 4 of 16 cells to "
                      "its floor (0.01 of the mean cell total): 4 that the raster covers with "
                      "no positive pixel (outside its extent, nodata or zero) and 0 below the "
                      "floor. Where the raster does not cover the lattice, the model reads "
                      "those cells as nearly empty of people (a fit worse than without the "
                      "exposure): use a raster that covers the whole lattice"]


def test_a_candidates_fit_warnings_name_the_candidate(scenario, region):
    # A fit stopped by max_seconds warned "n_iter='auto' stopped ..." with no candidate named.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        geosynth.tune(scenario.data, ATTRIBUTES, [(4, 4), (8, 8)], region=region, m=2,
                      n_quadrants=50, seed=1, progress=False,
                      fit_options={"n_iter": "auto", "max_seconds": 0.01})
    stopped = sorted(str(w.message).split(": n_iter='auto'")[0] for w in caught
                     if "n_iter='auto'" in str(w.message))
    assert stopped == ["candidate '4x4'", "candidate '8x8'"]
    # Outside tune, nothing is labelled: the prefix is the candidate's task's only.
    with warnings.catch_warnings(record=True) as after:
        warnings.simplefilter("always")
        warnings.warn("plain", UserWarning, stacklevel=1)
    assert [str(w.message) for w in after] == ["plain"]


def _warning_task(message_of):
    """A stand-in candidate task: sleeps, warns ``message_of(label)``, returns a stub run."""
    import time

    def task(gdf, candidate, setup, seed, stop, lattice):
        time.sleep(0.2)
        warnings.warn(message_of(candidate.label), stacklevel=1)
        return tuning_module._CandidateRun(
            {**tuning_module._settings_row(candidate, lattice.grid, len(gdf)),
             **{name: np.nan for name in tuning_module.MEASURES}, "true_match_rate": 0.0},
            lattice.grid, [shapely.get_coordinates(gdf.geometry)])

    return task


def test_overlapping_tunes_install_the_labelling_once_and_restore_it(monkeypatch):
    # Each call's catch_warnings restored what the other had installed: a label twice, one
    # missing, and the labelling showwarning left in place after both returned; then pandas'
    # catch_warnings in one call's thread undid the showwarning the other had installed. Here
    # the second call ends first, inside the first, as threads of two tunes may.
    import threading

    shown = []
    record = shown.append
    monkeypatch.setattr(warnings, "_showwarnmsg", record)

    def show(text):
        warnings._showwarnmsg(warnings.WarningMessage(UserWarning(text), UserWarning, "f.py", 1))

    first_in, second_out = threading.Event(), threading.Event()

    def second():
        with tuning_module._labelled_warnings():
            first_in.wait()
            with tuning_module._running("b"):
                show("from b")
        second_out.set()

    thread = threading.Thread(target=second)
    with tuning_module._labelled_warnings():
        thread.start()
        first_in.set()
        second_out.wait()
        with tuning_module._running("a"):
            show("from a")
        show("unmarked")
    thread.join()
    show("after")
    assert [str(m.message) for m in shown] == [
        "candidate 'b': from b", "candidate 'a': from a", "unmarked", "after"]
    assert [m.category for m in shown] == [UserWarning] * 4
    assert warnings._showwarnmsg is record and tuning_module._RUNNING == {}
    assert tuning_module._labelling["calls"] == 0
    tuning_module._labelled_showwarnmsg(  # a thread that read the hook as it was put back
        warnings.WarningMessage(UserWarning("late"), UserWarning, "f.py", 1))
    assert str(shown[-1].message) == "late"


def test_a_warning_class_with_more_arguments_is_labelled_not_fatal(scenario, region,
                                                                   monkeypatch):
    class CodedWarning(UserWarning):
        def __init__(self, message, code):
            super().__init__(message)
            self.code = code

    monkeypatch.setattr(tuning_module, "_run_candidate",
                        _warning_task(lambda label: CodedWarning("the library says", 7)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        geosynth.tune(scenario.data, ATTRIBUTES, [(4, 4)], region=region, progress=False,
                      seed=1)
    coded = [w for w in caught if w.category is CodedWarning]
    assert [str(w.message) for w in coded] == ["candidate '4x4': the library says"]


def test_the_callers_filters_judge_a_candidates_warnings_by_their_own_text(
        scenario, region, pixels, tmp_path, monkeypatch):
    # Re-issued with the label in front, the lattice's warnings escaped a filter on their text.
    monkeypatch.setattr(tuning_module, "run_candidate",
                        lambda *a, **k: pytest.fail("the lattices come before any fit"))
    empty_west = pixels.copy()
    empty_west[:, :2] = 0.0
    path = write_raster(tmp_path / "people.tif", empty_west,
                        from_origin(*scenario.bounds[::3], PIXEL, PIXEL), crs=scenario.data.crs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message="cell_exposure raised")
        with pytest.raises(pytest.fail.Exception):
            geosynth.tune(scenario.data, ATTRIBUTES, [Candidate(shape=(4, 4),
                                                                weights_exposure=True)],
                          region=region, progress=False, seed=1, weights=path)
    assert not [w for w in caught if "cell_exposure" in str(w.message)]


class _PicklingExecutor(ThreadPoolExecutor):
    """Run each task from a pickled copy of its call, as a process pool or a Dask cluster does."""

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(_unpickled_call, pickle.dumps((fn, args, kwargs)))


def _unpickled_call(payload: bytes):
    fn, args, kwargs = pickle.loads(payload)
    return fn(*args, **kwargs)


def test_an_open_dataset_reaches_an_executor_that_pickles_its_tasks(scenario, region, raster):
    # The tasks got the setup with the open rasterio dataset, which cannot be pickled: a
    # process pool or a Dask cluster raised TypeError. They need only their lattice's table.
    import pandas as pd
    import rasterio

    from geosynth.tuning import MEASURES

    by_path = _tune(scenario, region, [(4, 4)], weights=raster)
    with rasterio.open(raster) as dataset, _PicklingExecutor(1) as pool:
        by_dataset = _tune(scenario, region, [(4, 4)], weights=dataset, executor=pool)
    measures = [c for c in MEASURES if c != "seconds"]
    pd.testing.assert_frame_equal(by_path.table[measures], by_dataset.table[measures])
