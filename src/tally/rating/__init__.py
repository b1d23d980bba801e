"""Rating: from metered usage to lines of money, by a versioned price list.

The price list (``load_price_list``: YAML checked into ``Decimal`` models, or one refusal naming the
member at fault), and rating (``rate_facts``: one resource's usage in a window priced line by line,
ROUND_HALF_UP to the currency's minor unit per line). Pure: it imports ``tally.core`` only; the
commands and the routes that read a store live at the edges. docs/invoicing.md is the guide.
"""

from ._accounts import RELATION_TYPE as RELATION_TYPE
from ._accounts import Account as Account
from ._accounts import AccountSpan as AccountSpan
from ._accounts import BillingAccounts as BillingAccounts
from ._focus import COLUMNS as COLUMNS
from ._focus import Cell as Cell
from ._focus import CorrectionReason as CorrectionReason
from ._focus import FocusContext as FocusContext
from ._focus import focus_cells as focus_cells
from ._focus import focus_texts as focus_texts
from ._parquet import FocusParquetWriter as FocusParquetWriter
from ._periods import DEFAULT_GRACE as DEFAULT_GRACE
from ._periods import PeriodError as PeriodError
from ._periods import PeriodState as PeriodState
from ._periods import correction_lines as correction_lines
from ._periods import credits_and_debits as credits_and_debits
from ._periods import month_bounds as month_bounds
from ._periods import month_of as month_of
from ._periods import state_of as state_of
from ._price_list import PriceList as PriceList
from ._price_list import PriceListError as PriceListError
from ._price_list import load_price_list as load_price_list
from ._price_list import parse_price_list as parse_price_list
from ._price_list import version_document as version_document
from ._rate import RatedLine as RatedLine
from ._rate import Rater as Rater
from ._rate import RatingError as RatingError
from ._rate import add_totals as add_totals
from ._rate import project_totals as project_totals
from ._rate import quantity_text as quantity_text
from ._rate import rate_facts as rate_facts
from ._rated_format import RATED_COLUMNS as RATED_COLUMNS
from ._rated_format import rated_cells as rated_cells
from ._rated_format import rated_head as rated_head
from ._rated_format import rated_json as rated_json
from ._rated_format import rated_line_of as rated_line_of
from ._rated_format import totals_json as totals_json
from ._rated_read import RatedAmounts as RatedAmounts
from ._rated_read import RatedExportError as RatedExportError
from ._rated_read import RatedLines as RatedLines
from ._rated_read import interval_facts as interval_facts
from ._rated_read import read_rated as read_rated

__all__ = [
    "COLUMNS",
    "DEFAULT_GRACE",
    "RATED_COLUMNS",
    "RELATION_TYPE",
    "Account",
    "AccountSpan",
    "BillingAccounts",
    "Cell",
    "CorrectionReason",
    "FocusContext",
    "FocusParquetWriter",
    "PeriodError",
    "PeriodState",
    "PriceList",
    "PriceListError",
    "RatedAmounts",
    "RatedExportError",
    "RatedLine",
    "RatedLines",
    "Rater",
    "RatingError",
    "add_totals",
    "correction_lines",
    "credits_and_debits",
    "focus_cells",
    "focus_texts",
    "interval_facts",
    "load_price_list",
    "month_bounds",
    "month_of",
    "parse_price_list",
    "project_totals",
    "quantity_text",
    "rate_facts",
    "rated_cells",
    "rated_head",
    "rated_json",
    "rated_line_of",
    "read_rated",
    "state_of",
    "totals_json",
    "version_document",
]
