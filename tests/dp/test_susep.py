import numpy as np
import pytest

from geosynth import datasets
from geosynth.datasets import susep_collisions
from geosynth.dp.synthesizers import DirichletMultinomialSynthesizer
from geosynth.errors import InputError


def test_table_4_1_totals():
    table = susep_collisions()
    assert list(table.columns) == ["age_band", "sex", "collisions"]
    assert len(table) == 8
    assert table["collisions"].dtype == np.int64
    by_sex = table.groupby("sex")["collisions"].sum()
    assert by_sex.to_dict() == {"female": 22, "male": 85}
    assert table["collisions"].sum() == 107
    by_age = table.groupby("age_band")["collisions"].sum()
    assert by_age.to_dict() == {"26-35": 27, "36-45": 26, "46-55": 29, "55+": 25}
    cell = table.set_index(["age_band", "sex"])["collisions"]
    assert cell[("36-45", "female")] == 2 and cell[("36-45", "male")] == 24


@pytest.mark.filterwarnings("ignore::geosynth.errors.PrivacyLeakWarning")
def test_thesis_release_of_the_table():
    counts = susep_collisions().set_index(["age_band", "sex"])["collisions"]
    synth = DirichletMultinomialSynthesizer(2.0).fit(counts)
    assert synth.alpha[0] == pytest.approx(16.75, abs=0.005)
    release = synth.sample(seed=1)
    assert release.columns.equals(counts.index)
    assert int(release.to_numpy().sum()) == 107


def test_missing_file_raises(tmp_path, monkeypatch):
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "geosynth" / "datasets.py"))
    with pytest.raises(InputError, match="susep_collisions.csv not found.*editable"):
        susep_collisions()
