"""The fuzzer's parts; the driver is ``tests/fuzz.py`` and the target table ``tests/fuzz_targets.py``."""
