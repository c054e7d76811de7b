"""Files a ``.keras`` archive keeps for single layers: ``assets/<object path>/<name>``.

Keras 3's ``saving_lib`` gives every object with a ``save_assets`` method a folder under ``assets/``
named by the object path its weights have in ``model.weights.h5`` (``layers/integer_lookup``, in a
nested model ``layers/functional/layers/integer_lookup``) and zips the folder into the archive: an
adapted IntegerLookup, StringLookup or TextVectorization writes its ``vocabulary.txt`` there.
``keras_v3.attach_v3_weights`` hands each layer the files of its own path (``LayerSpec.assets``).

Nothing is extracted: member names are split and compared, never joined to a directory. A member over
``MAX_ASSET_BYTES`` (or past ``MAX_TOTAL_BYTES`` of them) is left out rather than read; a converter
that needs it then refuses, saying the archive holds none it can read.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping

from ..errors import FormatError

PREFIX = "assets/"
MAX_ASSET_BYTES = 64 << 20  # a 1M-word vocabulary is ~10 MB
MAX_TOTAL_BYTES = 256 << 20


def read_assets(zf: zipfile.ZipFile, infos: Mapping[str, zipfile.ZipInfo], label: str) -> dict[str, dict[str, bytes]]:
    """Object path -> {file name: bytes} for the archive's ``assets/`` members (already checked by name,
    encryption and compression ratio in ``keras_zip._checked_members``)."""
    out: dict[str, dict[str, bytes]] = {}
    total = 0
    for name, info in infos.items():
        folder, _, leaf = name.removeprefix(PREFIX).rpartition("/")
        if not name.startswith(PREFIX) or not folder or not leaf:  # another member, or a folder entry
            continue
        if info.file_size > MAX_ASSET_BYTES or total + info.file_size > MAX_TOTAL_BYTES:
            continue
        try:
            with zf.open(info) as fh:
                data = fh.read(MAX_ASSET_BYTES + 1)  # never trust the declared size alone
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise FormatError(f"{label}: '{name}' cannot be read ({str(exc).splitlines()[0]}); "
                              "the archive is corrupt") from None
        if len(data) > MAX_ASSET_BYTES:
            continue
        total += len(data)
        out.setdefault(folder, {})[leaf] = data
    return out
