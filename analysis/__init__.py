"""Static analysis for decoding: tree-sitter documents, a workspace symbol index,
resolution at the cursor, monitors (logit masks) and the syntax guard.

The facade is :class:`CodeAnalysis`; see its docstring for what the Engine calls.
This package imports neither ``inkling.cache`` nor ``inkling.completion``.
"""
from .analysis_options import AnalysisOptions
from .code_analysis import CodeAnalysis
from .monitor import MonitorState
from .syntax_guard import longest_valid_prefix
from .text_edit import TextEdit
from .vocabulary import TokenVocabulary

__all__ = ["AnalysisOptions", "CodeAnalysis", "MonitorState", "TextEdit", "TokenVocabulary",
           "longest_valid_prefix"]
