"""Usage for billing: the export of metered usage per resource or group, and reading it back.

The numbers are ``tally.core``'s (the lifecycle fold clipped to a window); this package pages them
out of a store (``resource_page``, ``resource_pages``, ``group_rows``), encodes them as JSON items
or CSV lines, prices them by a price list (``rated_pages``, with ``tally.rating``), runs
``tally usage``, and reads an export back (``read_export``) for the simulator's comparison. It
imports the core, the rating and the store, never the HTTP layer.
"""

from ._export import UsageQuery as UsageQuery
from ._export import UsageRow as UsageRow
from ._export import WindowError as WindowError
from ._export import check_window as check_window
from ._export import group_rows as group_rows
from ._export import resource_page as resource_page
from ._export import resource_pages as resource_pages
from ._export import resources_in_scope as resources_in_scope
from ._export import rows_after as rows_after
from ._focus_write import write_focus as write_focus
from ._format import csv_header as csv_header
from ._format import csv_rows as csv_rows
from ._format import csv_text as csv_text
from ._format import quantity_members as quantity_members
from ._format import row_json as row_json
from ._period_closer import run_period_closer as run_period_closer
from ._periods import close_month as close_month
from ._periods import correct_month as correct_month
from ._rated import price_list_of as price_list_of
from ._rated import rated_pages as rated_pages
from ._rated import stored_price_list as stored_price_list
from ._rated_write import write_rated as write_rated
from ._read import ExportedLine as ExportedLine
from ._read import ExportedUsage as ExportedUsage
from ._read import ExportError as ExportError
from ._read import read_export as read_export

__all__ = [
    "ExportError",
    "ExportedLine",
    "ExportedUsage",
    "UsageQuery",
    "UsageRow",
    "WindowError",
    "check_window",
    "close_month",
    "correct_month",
    "csv_header",
    "csv_rows",
    "csv_text",
    "group_rows",
    "price_list_of",
    "quantity_members",
    "rated_pages",
    "read_export",
    "resource_page",
    "resource_pages",
    "resources_in_scope",
    "row_json",
    "rows_after",
    "run_period_closer",
    "stored_price_list",
    "write_focus",
    "write_rated",
]
