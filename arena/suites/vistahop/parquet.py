"""Parquet / Hugging Face datasets files (the released VistaHop subset is one: `data/subset1.parquet`).

Rows are streamed in batches (`pyarrow.parquet.ParquetFile.iter_batches`), never read as a whole table.
Columns are mapped by name; `columns={"question": ..., "answer": ..., "image": ..., "level": ..., "id": ...}`
overrides the detection (from `datasets.json`: the entry's `"columns"`). Detected names, first present wins:

- question: `question`, `prompt`, `query`, `problem`, `instruction` (a chat-message list gives its first user
  text, `<image>` markers removed, as the VistaArena JSON format does);
- answer: `answer`, `answers`, `ground_truth`, `gt`, `label`, `reward_model` (its `ground_truth`); a list is
  several accepted answers;
- image: `image`, `images`, `img`, `image_path`, `image_bytes`: raw bytes, a `{bytes, path}` struct (the
  datasets `Image` feature), or a path relative to the file's directory; a list gives its first element;
- level: `level`, `difficulty`; hops: `hops`; category: `category`; id: `id`, `idx`, `uid`, `sample_id`,
  `question_id` (default: the row number). `extra_info.{level,hops,category}` is read too;
- stored reverse-image results: `image_search_title_list` and `image_search_thumbnail_list` (paths, bytes or
  `{bytes, path}` structs; the image-search tool reads embedded thumbnails through `Dataset.embedded`).

Embedded image bytes are not kept at load time: the task refers to them as `parquet:<column>#<row>` (and
`#<row>.<i>` for the i-th image of a list cell) and `ParquetImages` reads that one cell when it is needed (an
episode starts, a stored thumbnail is shown), so the bytes go straight to the run's blobs.
A mapping that names a missing column, or a required column that cannot be found, is an error naming the file,
the column and the columns the file has.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterator

import pyarrow.parquet as pq

from arena.core.dataset import Dataset, DatasetError, Loader
from arena.core.images import ImageError
from arena.core.task import Task

from arena.core.arena_tasks import check_paths

CANDIDATES: dict[str, tuple[str, ...]] = {
    "question": ("question", "prompt", "query", "problem", "instruction"),
    "answer": ("answer", "answers", "ground_truth", "gt", "label", "reward_model"),
    "image": ("image", "images", "img", "image_path", "image_bytes"),
    "level": ("level", "difficulty"),
    "hops": ("hops",),
    "category": ("category",),
    "id": ("id", "idx", "uid", "sample_id", "question_id"),
    "options": ("options", "choices"),
    "search_titles": ("image_search_title_list",),
    "search_thumbnails": ("image_search_thumbnail_list",),
}
REQUIRED = ("question", "answer")
REF_PREFIX = "parquet:"
BATCH_ROWS = 64
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpg"), (b"GIF8", "gif"), (b"BM", "bmp"))


def image_ext(data: bytes, name: str | None = None) -> str:
    """File extension of image bytes, from their signature (else from `name`, else "bin")."""
    for magic, ext in _MAGIC:
        if data.startswith(magic):
            return ext
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    suffix = Path(name or "").suffix.lstrip(".").lower()
    return suffix or "bin"


def map_columns(names: list[str], given: dict[str, str] | None, where: str) -> dict[str, str]:
    """Role -> column: the given mapping (each column must exist), the rest detected by name."""
    given = dict(given or {})
    unknown = set(given) - set(CANDIDATES)
    if unknown:
        raise DatasetError(f"{where}: columns: unknown role(s) {sorted(unknown)}; roles: {', '.join(CANDIDATES)}")
    lowered = {n.lower(): n for n in names}
    mapping: dict[str, str] = {}
    for role, candidates in CANDIDATES.items():
        if role in given:
            if given[role] not in names:
                raise DatasetError(f"{where}: column {given[role]!r} (mapped to {role}) not found; the file has "
                                   f"columns: {', '.join(names)}")
            mapping[role] = given[role]
            continue
        found = next((lowered[c] for c in candidates if c in lowered), None)
        if found is not None:
            mapping[role] = found
    for role in REQUIRED:
        if role not in mapping:
            raise DatasetError(f"{where}: no {role} column (looked for {', '.join(CANDIDATES[role])}); the file has "
                               f"columns: {', '.join(names)}; name one with columns.{role}")
    return mapping


def question_text(value: Any, where: str) -> str:
    """A question cell: a string, or chat messages whose first user text is the question; `<image>` removed."""
    if isinstance(value, str):
        return value.replace("<image>", "").strip()
    if isinstance(value, (list, tuple)):
        for message in value:
            if isinstance(message, dict) and message.get("role") == "user":
                content = message.get("content")
                if isinstance(content, (list, tuple)):
                    content = "".join(str(p.get("text") or "") for p in content
                                      if isinstance(p, dict) and p.get("type") == "text")
                if isinstance(content, str):
                    return content.replace("<image>", "").strip()
    raise DatasetError(f"{where}: a question must be text or chat messages with a user text")


def _first(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return value[0] if value else None
    return value


def _answers(value: Any, where: str, column: str) -> list[str]:
    if isinstance(value, dict):
        if "ground_truth" not in value:
            raise DatasetError(f"{where}: column {column}: a struct without ground_truth")
        value = value["ground_truth"]
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            pass
    values = list(value) if isinstance(value, (list, tuple)) else [] if value is None else [value]
    answers = [str(v) for v in values if v is not None and str(v) != ""]
    if not answers:
        raise DatasetError(f"{where}: column {column}: empty answer")
    return answers


def _image_ref(value: Any, row: int, column: str, where: str) -> str | None:
    """The task image reference of a cell: an embedded-bytes reference, or a path."""
    value = _first(value)
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return f"{REF_PREFIX}{column}#{row}" if value else None
    if isinstance(value, dict):
        if value.get("bytes"):
            return f"{REF_PREFIX}{column}#{row}"
        if value.get("path"):
            return str(value["path"])
        return None
    if isinstance(value, str):
        return value or None
    raise DatasetError(f"{where}: column {column}: an image must be bytes, a {{bytes, path}} struct or a path, "
                       f"got {type(value).__name__}")


def _thumbnail_ref(thumbs: Any, i: int, row: int, column: str | None) -> str | None:
    """The i-th stored thumbnail: a path, or a reference to embedded bytes (`parquet:<column>#<row>.<i>`)."""
    value = thumbs[i] if i < len(thumbs) else None
    if isinstance(value, (bytes, bytearray)) or (isinstance(value, dict) and value.get("bytes")):
        return f"{REF_PREFIX}{column}#{row}.{i}"
    if isinstance(value, dict):
        value = value.get("path")
    return str(value) if value else None


class ParquetImages:
    """Reads the image bytes of one row of a Parquet file on demand (one row group, in small batches). Safe to
    call from several threads: a `ParquetFile` is not (concurrent reads fail with pyarrow's "ReadRangeCache did not
    find matching cache entry"), so reads of one file take turns."""

    def __init__(self, path: Path):
        self.path = path
        self._file: pq.ParquetFile | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_file": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def owns(self, ref: str) -> bool:
        return ref.startswith(REF_PREFIX)

    def _parquet(self) -> pq.ParquetFile:
        if self._file is None:
            self._file = pq.ParquetFile(self.path)
        return self._file

    def read(self, ref: str) -> tuple[bytes, str]:
        with self._lock:
            return self._read(ref)

    def _read(self, ref: str) -> tuple[bytes, str]:
        column, _, position = ref[len(REF_PREFIX):].rpartition("#")
        row_text, _, index_text = position.partition(".")
        try:
            row, index = int(row_text), int(index_text or 0)
        except ValueError:
            raise ImageError(f"{self.path}: bad embedded image reference {ref!r}") from None
        meta = self._parquet().metadata
        start = 0
        for group in range(meta.num_row_groups):
            rows = meta.row_group(group).num_rows
            if row < start + rows:
                break
            start += rows
        else:
            raise ImageError(f"{self.path}: row {row} of column {column!r} does not exist")
        offset = row - start
        for batch in self._parquet().iter_batches(batch_size=BATCH_ROWS, row_groups=[group], columns=[column]):
            if offset < batch.num_rows:
                cell = batch.column(0)[offset].as_py()
                if isinstance(cell, (list, tuple)):
                    cell = cell[index] if index < len(cell) else None
                break
            offset -= batch.num_rows
        name = None
        if isinstance(cell, dict):
            name, cell = cell.get("path"), cell.get("bytes")
        if not isinstance(cell, (bytes, bytearray)) or not cell:
            raise ImageError(f"{self.path}: row {row} column {column!r}: no image bytes")
        return bytes(cell), image_ext(bytes(cell), name)


def iter_rows(path: Path, columns: list[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, {column: value}) streamed in batches."""
    try:
        parquet = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several kinds for a file that is not Parquet
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None
    row = 0
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=columns):
        for record in batch.to_pylist():
            yield row, record
            row += 1


def parquet_tasks(path: Path, root: Path, columns: dict[str, str] | None = None,
                  reward_fn: list[str] | None = None) -> list[Task]:
    """Tasks of a Parquet file; images that are paths resolve under `root` (which they may not leave)."""
    reward_fn = reward_fn or []
    try:
        names = pq.ParquetFile(path).schema_arrow.names
    except Exception as exc:
        raise DatasetError(f"{path}: not a readable Parquet file ({exc})") from None
    mapping = map_columns(names, columns, str(path))
    extra = ["extra_info"] if "extra_info" in names else []
    wanted = sorted(set(mapping.values()) | set(extra))
    mcq = "em_score_mcq" in reward_fn and "llm_score" not in reward_fn
    judge = "mcq" if mcq else ("llm" if "llm_score" in reward_fn else None)
    tasks, seen = [], set()
    for row, record in iter_rows(path, wanted):
        where = f"{path}: row {row}"
        extras = record.get("extra_info") if isinstance(record.get("extra_info"), dict) else {}

        def get(role: str) -> Any:
            return record.get(mapping[role]) if role in mapping else extras.get(role)

        question_value = get("question")
        if question_value is None:
            raise DatasetError(f"{where}: column {mapping['question']}: empty question")
        question = question_text(question_value, f"{where}: column {mapping['question']}")
        answers = _answers(get("answer"), where, mapping["answer"])
        image = _image_ref(get("image"), row, mapping.get("image", "image"), where) if "image" in mapping else None
        hops = get("hops")
        task_id = str(get("id")) if get("id") is not None else f"row-{row}"
        if task_id in seen:
            raise DatasetError(f"{where}: column {mapping.get('id', 'id')}: duplicate id {task_id!r}")
        seen.add(task_id)
        options = get("options")
        titles = get("search_titles") if isinstance(get("search_titles"), (list, tuple)) else []
        thumbs = get("search_thumbnails") if isinstance(get("search_thumbnails"), (list, tuple)) else []
        stored = [{"title": str(t), "thumbnail": _thumbnail_ref(thumbs, i, row, mapping.get("search_thumbnails"))}
                  for i, t in enumerate(list(titles)[:5])]
        task = Task(id=task_id, suite="vistahop", question=question, images=[image] if image else [],
                    answers=answers, kind="mcq" if mcq else "open",
                    options=[str(o) for o in options] if isinstance(options, (list, tuple)) else [],
                    level=str(get("level")) if get("level") is not None else None,
                    hops=int(hops) if isinstance(hops, (int, float)) else None,
                    category=str(get("category")) if get("category") is not None else None,
                    metadata={"source_row": row, "image_search": stored}, judge=judge)
        check_paths(Task(id=task.id, question="", images=[i for i in task.images if not i.startswith(REF_PREFIX)],
                         metadata={"image_search": [r for r in stored if not str(r["thumbnail"] or "").startswith(
                             REF_PREFIX)]}), root, where)
        tasks.append(task)
    return tasks


def parquet_dataset(path: Path, root: Path, name: str, columns: dict[str, str] | None = None,
                    reward_fn: list[str] | None = None, **fields: Any) -> Dataset:
    return Dataset(name=name, root=root, tasks=parquet_tasks(path, root, columns, reward_fn), source=path,
                   reward_fn=list(reward_fn or []), embedded=ParquetImages(path), **fields)


def _is_parquet(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in (".parquet", ".pq")


def load_parquet(path: Path, root: Path | None = None) -> list[Dataset]:
    base = (root or path.parent).resolve()
    return [parquet_dataset(path, base, path.stem)]


PARQUET_LOADER = Loader("parquet", detect=_is_parquet, load=load_parquet)
