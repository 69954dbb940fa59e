"""``python -m geosynth``: the ``geosynth`` command, where its script is not on the PATH."""

from geosynth.cli import main

if __name__ == "__main__":
    main()
