"""Pure numpy models of LLM inference performance. Nothing here imports MkDocs or altair."""
from .catalogue import LLM, Accelerator, Catalogue, UnknownKey, load_catalogue
from .yamlsource import SourceError

__all__ = ["LLM", "Accelerator", "Catalogue", "SourceError", "UnknownKey", "load_catalogue"]
