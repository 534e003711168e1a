# ETS dataset collector: model zoo, deterministic configs, per-pass profiling workers, labelling driver.
# Entry point: tools/collect/collect.py (see docs/dataset.md); Python parts run on Debian's torch (/usr/bin/python3).
