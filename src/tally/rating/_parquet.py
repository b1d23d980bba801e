"""The FOCUS rows as a Parquet file, typed: decimals as decimal128(38, 12), instants as UTC timestamps.

pyarrow is imported here only, when a Parquet export is asked for: it is heavy to load, and no
other command needs it. A row group is written per batch of rows, so a month of a large cloud is
never held whole in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from types import TracebackType
from typing import IO, Any

from ._focus import COLUMNS, DATETIME_COLUMNS, DECIMAL_COLUMNS, Cell

_SCALE = Decimal(1).scaleb(-12)


class FocusParquetWriter:
    """Writes batches of typed FOCUS rows (``focus_cells``) to ``sink``; use with ``with``."""

    def __init__(self, sink: IO[bytes]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        fields = []
        for name in COLUMNS:
            if name in DECIMAL_COLUMNS:
                kind = pa.decimal128(38, 12)
            elif name in DATETIME_COLUMNS:
                kind = pa.timestamp("us", tz="UTC")
            else:
                kind = pa.string()
            fields.append(pa.field(name, kind))
        self._pa = pa
        self._schema = pa.schema(fields, metadata={"focus_version": "1.2"})
        self._writer = pq.ParquetWriter(sink, self._schema)

    def write(self, rows: Sequence[Sequence[Cell]]) -> None:
        if not rows:
            return
        columns: list[list[Any]] = [[] for _ in COLUMNS]
        for row in rows:
            for i, cell in enumerate(row):
                columns[i].append(cell.quantize(_SCALE) if isinstance(cell, Decimal) else cell)
        table = self._pa.Table.from_arrays(
            [self._pa.array(values, type=f.type) for values, f in zip(columns, self._schema, strict=True)],
            schema=self._schema,
        )
        self._writer.write_table(table)

    def __enter__(self) -> FocusParquetWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._writer.close()
