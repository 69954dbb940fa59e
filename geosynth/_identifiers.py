"""The names of record and cell identifiers: one rule for the whole package.

:func:`is_identifier_name` decides which column names are an identifier's: the writers, the
readers and the public maps refuse such release columns (:mod:`geosynth.synth.release`,
:mod:`geosynth.io`, :mod:`geosynth.maps`), and :func:`geosynth.prepare` refuses a continuous
column so named. Here, below the data layer, so that each of them can import it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = [
    "INTERNAL_PREFIX",
    "ID_COLUMNS",
    "IDENTIFIER_WORDS",
    "IDENTIFIER_ENDINGS",
    "PANDAS_UNNAMED",
    "LAYER_NAMES",
    "is_identifier_name",
    "names_a_record",
    "RECORD_WORDS",
    "in_id_columns",
    "name_words",
    "case_clash",
]

#: Columns whose name starts with this prefix are bookkeeping (e.g. pandas' ``_merge``): dropped
#: by :func:`geosynth.to_public`, so :func:`geosynth.prepare` refuses attributes so named.
INTERNAL_PREFIX = "_"
#: Column names (compared case-insensitively) that identify records or their cells: a release
#: column with one of these names is refused by :func:`to_public`; the writers and maps of
#: :mod:`geosynth.io` and :mod:`geosynth.maps` refuse every name :func:`is_identifier_name`
#: takes for an identifier (these and more).
ID_COLUMNS = frozenset(
    {
        "index",
        "level_0",
        "fid",
        "cell",
        "cell_id",
        "record_cell",
        "record_index",
        "record_combo",
        "original_index",
    }
)
#: Words that make a column name an identifier wherever they stand in it (``id``,
#: ``patient_id``, ``id_paciente``, ``patientId``, ``OBJECTID``, ``uuid``): record, row, object
#: and person identifiers (``ssn``; ``cpf``, the Brazilian taxpayer number; ``prontuario``, a
#: Brazilian medical record; ``eid``, UK Biobank's participant id).
IDENTIFIER_WORDS = frozenset({
    "id", "ids", "idx", "uid", "uuid", "guid", "gid", "pid", "oid", "eid", "fid", "objectid",
    "globalid", "rowid", "ssn", "cpf", "prontuario", "mrn",  # a medical record number
    "cns",  # Brazil's national health card (Cartão Nacional de Saúde)
    "identifier", "pseudonym",
})
#: Words of a name that make an identifier a person's or a record's own, not a facility's or an
#: area's (``clinic_id``, ``ward_no``, ``ID_MUNICIP``): :func:`names_a_record`.
RECORD_WORDS = frozenset({
    "patient", "paciente", "person", "pessoa", "people", "subject", "participant", "member",
    "client", "customer", "user", "respondent", "individual", "resident", "visitor", "case",
    "caso", "record", "registro", "visit", "admission", "encounter", "episode", "claim",
    "household", "family", "row", "obs", "observation", "mrn", "ssn", "cpf", "prontuario",
    "eid", "pid", "uid", "uuid", "guid", "rowid", "objectid", "globalid", "idx", "index",
    "cns", "nhs", "chi",  # the UK's NHS number and Scotland's Community Health Index
    "pseudo", "pseudonym", "identifier",
})
#: Words that make a column name an identifier beside a word of :data:`RECORD_WORDS`
#: (``cod_paciente``, ``patient_code``, ``case_ref``), not alone (``zip_code``, ``icd_code``).
RECORD_KEY_WORDS = frozenset({"code", "cod", "codigo", "ref", "reference"})
#: Words that make a column name an identifier as its last word after another one: a record's
#: number or key (``patient_no``, ``case_number``, ``Fall_Nr``, ``AreaKey``); ``key`` and
#: ``number`` alone too. Not first (``num_rooms``, ``nr_children``, ``no_show`` count or
#: describe) and not ``num`` (``age_num`` is a numeric age).
IDENTIFIER_ENDINGS = frozenset({"no", "nr", "number", "key"})
#: Column names (in any case) a release's layer keeps for itself: its geometry (``geom`` in a
#: GeoPackage, ``geometry`` in GeoPandas) and its feature id.
LAYER_NAMES = frozenset({"geom", "fid", "geometry"})
# The name pandas gives a CSV column without a header: the index to_csv wrote.
PANDAS_UNNAMED = re.compile(r"Unnamed: \d+")


def is_identifier_name(column: Any) -> bool:
    """Whether a column name looks like the name of a record or cell identifier.

    The one rule of geosynth for the names of identifiers, used by
    :func:`geosynth.io.write_release`, :func:`geosynth.io.read_release` (so ``geosynth
    inspect`` and ``geosynth evaluate``), the public maps of :mod:`geosynth.maps`, and
    :func:`geosynth.prepare` for continuous columns.

    Parameters
    ----------
    column : Any
        A column label (compared as ``str(column)``).

    Returns
    -------
    bool
        True for a name of :data:`ID_COLUMNS` (without case, surrounding spaces, or the spaces
        and hyphens of ``"Cell ID"``), for pandas' ``"Unnamed: 0"`` (the index that
        ``to_csv`` wrote, read back as a column), a name one of whose words is in
        :data:`IDENTIFIER_WORDS`, one with words of both :data:`RECORD_KEY_WORDS` and
        :data:`RECORD_WORDS` (``cod_paciente``), or whose last word, after another word, is in
        :data:`IDENTIFIER_ENDINGS` (``key`` and ``number`` alone too). Words are split at
        ``_``, spaces, hyphens and other punctuation, between digits and letters, and at the
        capitals of camelCase (``patientId`` is ``patient``, ``id``); accents are ignored.
        Whole words only: ``valid``, ``idade`` (Portuguese: age), ``NU_IDADE_N``, ``width``,
        ``paid``, ``key_stage`` and ``num_rooms`` are not identifiers. A name glued in one
        case (``PATIENTID``) is one word and cannot be told from ``VALID``: it is not.

    Examples
    --------
    >>> [is_identifier_name(c) for c in ("patient_id", "patientId", "id_paciente", "Case No",
    ...                                  "uuid", "AreaKey")]
    [True, True, True, True, True, True]
    >>> [is_identifier_name(c) for c in ("NHSNumber", "cod_paciente", "pseudo_id", "cns")]
    [True, True, True, True]
    >>> [is_identifier_name(c) for c in ("valid", "idade", "width", "x1", "num_rooms",
    ...                                  "zip_code", "chi_square")]
    [False, False, False, False, False, False, False]
    """
    if in_id_columns(column) or PANDAS_UNNAMED.fullmatch(str(column).strip()):
        return True
    words = name_words(column)
    if IDENTIFIER_WORDS.intersection(words):
        return True
    if RECORD_KEY_WORDS.intersection(words) and RECORD_WORDS.intersection(words):
        return True
    if not words or words[-1] not in IDENTIFIER_ENDINGS:
        return False
    return len(words) > 1 or words[-1] in {"key", "number"}


def names_a_record(column: Any) -> bool:
    """Whether an identifier's name says whose: a person's or a record's own.

    ``patient_id``, ``mrn``, ``case_no``, ``visit_number``, a bare ``id`` or ``uuid``, pandas'
    ``Unnamed: 0``: yes. ``clinic_id``, ``ward_no``, ``ID_MUNICIP``, ``region_id``: a
    facility's or an area's, no. For :func:`geosynth.data.identifies_records`, which refuses the
    first kind over larger groups (a patient's ten visits).

    Parameters
    ----------
    column : Any
        A column label that :func:`is_identifier_name` takes for an identifier's.

    Returns
    -------
    bool
    """
    if in_id_columns(column) or PANDAS_UNNAMED.fullmatch(str(column).strip()):
        return True
    words = name_words(column)
    other = [w for w in words if w not in IDENTIFIER_WORDS and w not in IDENTIFIER_ENDINGS]
    return not other or bool(RECORD_WORDS.intersection(words))


def name_words(column: Any) -> list[str]:
    """Return the lower-case words of a column name (see :func:`is_identifier_name`)."""
    text = unicodedata.normalize("NFKD", str(column))
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    text = re.sub(r"(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_])", " ", text)
    return [word for word in re.split(r"[\W_]+", text.lower()) if word]


def in_id_columns(column: Any) -> bool:
    """Whether ``column`` is a name of :data:`ID_COLUMNS` (``"Cell ID"`` is ``cell_id``).

    Compared in lower case, without surrounding spaces, with ``_`` for spaces and hyphens.
    """
    return re.sub(r"[\s\-]+", "_", str(column).strip().lower()) in ID_COLUMNS


def case_clash(names: Any) -> tuple[str, str] | None:
    """Return the first two names that differ only in case (``Sex``, ``sex``), else None.

    A GeoPackage (SQLite) and a shapefile name columns without case: the two are one column.
    """
    seen: dict[str, str] = {}
    for name in names:
        key = str(name).lower()
        if key in seen:
            return seen[key], str(name)
        seen[key] = str(name)
    return None
