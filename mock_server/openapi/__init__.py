"""The OpenAPI 3.1 document (`GET /openapi.json`) and the docs page (`GET /docs`).

The document describes the merchant API as the spec defines it, under both path
prefixes, the plant demo and the control API under `/_mock`. Its schemas are exact:
every field the sandbox writes, nullable ones as type arrays, objects closed with
`additionalProperties: false` where the sandbox's shape is fixed, so a fuzzer can hold
every response to them. `tests/test_openapi.py` keeps it true: every route the app
serves is documented, every documented route is served, and real responses validate.

The page is three static files in `data/docs/`, served by the sandbox itself (no CDN:
it must work offline). It reads this document and can send requests ("try it").
"""

from typing import Any

from .serve import DOCUMENT_PATHS, routes, serve_docs_file, serve_openapi

__all__ = ["DOCUMENT_PATHS", "build_openapi", "routes", "serve_docs_file", "serve_openapi"]


def __getattr__(name: str) -> Any:
    """`build_openapi` is imported when first asked for: importing the schemas' modules
    would lengthen every start-up (bench/FINDINGS.md section 7), and most runs never
    serve the document."""
    if name == "build_openapi":
        from .document import build_openapi

        return build_openapi
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
