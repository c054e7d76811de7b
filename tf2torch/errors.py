"""The one exception family of tf2torch.

Every error a user can cause is a ``Tf2TorchError``. Its message is one line that names the file or
variable, says what was expected and what was found, and how to fix it. The CLI maps the classes to
exit codes in one place (``tf2torch.cli``); the library never calls ``sys.exit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # errors.py is the lowest layer: the report's type is named, never imported at run time
    from .map.account import Report

# Every character str.splitlines() breaks at, written as its escape: a message quoting a name taken
# from a hostile file (a layer named "a\nb") stays one line, and the name stays readable.
_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


class Tf2TorchError(Exception):
    """Base class of every error tf2torch raises on purpose."""

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            args = (args[0].translate(_LINE_BREAKS),)
        super().__init__(*args)


class FormatError(Tf2TorchError):
    """An input file is not what its name or contents claim (truncated, garbage, unknown format)."""


class IntegrityError(FormatError):
    """A checksum (CRC32C of a table block or of a tensor) does not match the stored value."""


class UnsupportedError(Tf2TorchError):
    """A valid input uses something tf2torch does not convert (a layer class, a dtype, a Lambda)."""


class MappingError(Tf2TorchError):
    """Source variables and target keys could not be matched (ambiguous, missing, shape mismatch).

    ``report`` is the conversion's full report when the contract failed (None when matching stopped
    before there was one): ``--suggest-rules`` proposes rules from it, a caller can show every entry."""

    def __init__(self, *args: object, report: Report | None = None) -> None:
        super().__init__(*args)
        self.report = report


class OutputError(Tf2TorchError):
    """The output location cannot be written (exists without --force, not a directory, ...)."""


class UsageError(Tf2TorchError):
    """Arguments that contradict each other or name something that does not exist."""


class MissingDependencyError(Tf2TorchError):
    """An optional extra is needed (TensorFlow for verify, matplotlib for plots)."""


class MismatchError(Tf2TorchError):
    """Verification ran and the PyTorch outputs differ from TensorFlow's beyond tolerance."""

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result
