"""The exceptions of the cubby package."""

from __future__ import annotations


class Error(Exception):
    """A failure reported by libcubby; ``status`` is the cubby_status code (0 if none)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class LibraryError(Error, ImportError):
    """libcubby could not be found or loaded; the message names CUBBY_LIBRARY."""


class CompileError(Error):
    """NVRTC rejected the program; ``log`` is NVRTC's log."""

    def __init__(self, message: str, log: str, status: int = 0) -> None:
        super().__init__(message, status)
        self.log = log
