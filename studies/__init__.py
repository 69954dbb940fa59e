"""Paper reproductions and studies built on geosynth; not part of the installed package.

Each module is one command, run from the repository root (``python -m studies.<name>``), that
regenerates a table of ``docs/``; see ``studies/README.md``. Studies use only public names of
:mod:`geosynth`: the algorithms they exercise live in the package, the set-ups, the published
figures they compare against and the Markdown they write live here.
"""
