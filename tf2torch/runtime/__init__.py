"""tf2torch's runtime library: the code generated and patched ``model.py`` files carry, so they need only torch.

Every top-level definition of a module here (and of each family's ``runtime*.py`` under
``tf2torch/families/``) is copied by name into generated files by ``codegen/library.py``, which reads
these files and never imports them. So: nothing here may import tf2torch outside this package, and one
name is defined once across all of them (generated files share one namespace; the library checks).
The modules are real, tested code: what tf2torch runs in-process and what the tests run is what ships.

This ``__init__`` imports nothing, so ``tf2torch.runtime.userfile`` loads without torch.
"""
