"""Static analysis for decoding: tree-sitter documents, a workspace symbol index,
resolution at the cursor, monitors (logit masks) and the syntax guard.

The facade is :class:`CodeAnalysis`; see its docstring for what the Engine calls.
This package imports neither ``inkling.cache`` nor ``inkling.completion``.
"""
from inkling.analysis.analysis_options import AnalysisOptions
from inkling.analysis.code_analysis import CodeAnalysis
from inkling.analysis.monitor import MonitorState
from inkling.analysis.syntax_guard import longest_valid_prefix
from inkling.analysis.text_edit import TextEdit
from inkling.analysis.vocabulary import TokenVocabulary

__all__ = ["AnalysisOptions", "CodeAnalysis", "MonitorState", "TextEdit", "TokenVocabulary",
           "longest_valid_prefix"]
