"""CSV input of the commands: a header row, one row per sample, one-line errors."""

from __future__ import annotations

import csv
import math

import numpy as np


def _parse_float(cell):
    try:
        return float(cell)
    except ValueError:
        return None


class _CSVTable:
    """The cells of a CSV file as stripped strings, with the file line of every row."""

    def __init__(self, path, header, rows, lines):
        self.path, self.header, self.rows, self.lines = path, header, rows, lines

    def index(self, name, role):
        hits = [j for j, h in enumerate(self.header) if h == name]
        if not hits:
            cols = ", ".join(repr(h) for h in self.header)
            raise ValueError(f"{self.path}: no {role} column {name!r} (columns: {cols})")
        if len(hits) > 1:
            raise ValueError(
                f"{self.path}: the {role} column {name!r} is named {len(hits)} times in the "
                f"header (columns {', '.join(str(j + 1) for j in hits)}); rename the others"
            )
        return hits[0]

    def kind(self, j):
        """'numeric', 'text' (no cell is a number), 'mixed' or 'empty'."""
        cells = [r[j] for r in self.rows if r[j]]
        if not cells:
            return "empty"
        parsed = [_parse_float(c) is not None for c in cells]
        if all(parsed):
            return "numeric"
        return "mixed" if any(parsed) else "text"

    def first_text(self, j):
        for r, line in zip(self.rows, self.lines, strict=True):
            if r[j] and _parse_float(r[j]) is None:
                return line, r[j]
        return None, None

    def column(self, j, role):
        """Column j as floats; any empty, non-numeric or non-finite cell is an error."""
        name = self.header[j]
        out = np.empty(len(self.rows))
        for i, (r, line) in enumerate(zip(self.rows, self.lines, strict=True)):
            cell = r[j]
            where = f"{self.path}, line {line}, {role} column {name!r}"
            if not cell:
                raise ValueError(f"{where}: empty cell (missing values are not supported)")
            value = _parse_float(cell)
            if value is None:
                raise ValueError(f"{where}: {cell!r} is not a number")
            if not math.isfinite(value):
                raise ValueError(f"{where}: {cell!r} is not finite (NaN and infinities are "
                                 "not supported)")
            out[i] = value
        return out


#: Delimiters recognised in a header read as one column: (character, how to pass it).
_OTHER_DELIMITERS = ((";", "';'"), ("\t", "tab"), ("|", "'|'"), (",", "','"))


def _check_delimiter(path, header, delimiter):
    """Refuse a one-column header that another common delimiter splits into columns."""
    if len(header) != 1:
        return
    for char, shown in _OTHER_DELIMITERS:
        if char != delimiter and len(header[0].split(char)) > 1:
            raise ValueError(
                f"{path}: the header {header[0]!r} is one column with the delimiter "
                f"{delimiter!r}, but {char!r} separates it into "
                f"{len(header[0].split(char))}: the file looks {shown}-separated; read it "
                f"with --delimiter {shown}"
            )


def _read_csv(path, delimiter):
    """Read a CSV file with a header row; rows whose cells are all blank are skipped."""
    header, rows, lines = None, [], []
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            try:
                for row in reader:
                    cells = [c.strip() for c in row]
                    if not any(cells):
                        continue
                    if header is None:
                        header = cells
                        _check_delimiter(path, header, delimiter)
                        continue
                    if len(cells) != len(header):
                        raise ValueError(
                            f"{path}, line {reader.line_num}: {len(cells)} cells, but the "
                            f"header has {len(header)} columns"
                        )
                    rows.append(cells)
                    lines.append(reader.line_num)
            except csv.Error as exc:
                raise ValueError(f"{path}, line {reader.line_num}: not valid CSV: {exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text file") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    if header is None:
        raise ValueError(f"{path} is empty: expected a header row and data rows")
    if not rows:
        raise ValueError(f"{path} has a header but no data rows")
    return _CSVTable(path, header, rows, lines)


def _fit_columns(table, target, features):
    """(X, y, feature names, ignored columns) of convex-fit, with one-line errors."""
    ti = table.index(target, "target")
    ignored = []
    if features is not None:
        for k, name in enumerate(features):
            if name in features[:k]:
                raise ValueError(f"--features names the column {name!r} twice")
        if target in features:
            raise ValueError(f"--features lists the target column {target!r}")
        fidx = [table.index(name, "feature") for name in features]
    else:
        fidx = []
        for j, name in enumerate(table.header):
            if j == ti:
                continue
            kind = table.kind(j)
            if kind in ("text", "empty"):
                ignored.append(name or f"column {j + 1}")
                continue
            label = repr(name) if name else f"{j + 1} (no name in the header)"
            if kind == "mixed":
                line, cell = table.first_text(j)
                raise ValueError(
                    f"{table.path}, line {line}, column {label}: {cell!r} is not a number "
                    "(a column of numbers with text in it; missing values are not "
                    "supported): fix the file or choose the columns with --features"
                )
            if not name:
                raise ValueError(f"{table.path}: column {label} holds numbers; name it "
                                 "or choose the columns with --features")
            fidx.append(table.index(name, "feature"))
        if not fidx:
            raise ValueError(
                f"{table.path}: no feature columns: no numeric column besides the target "
                f"{target!r}" + (f" (non-numeric: {', '.join(ignored)})" if ignored else "")
            )
    y = table.column(ti, "target")
    X = np.column_stack([table.column(j, "feature") for j in fidx])
    return X, y, [table.header[j] for j in fidx], ignored
