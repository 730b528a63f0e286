"""tapeflow: source-transforming automatic differentiation for Python and NumPy."""
from tapeflow import rules  # noqa: F401  (fills the rule table)
