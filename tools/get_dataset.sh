#!/usr/bin/env bash
# Places a dataset under datasets/NAME (Ultralytics YOLO layout: images/, labels/).
#   tools/get_dataset.sh NAME [DEST_ROOT]
# From $YOLO11_DATASETS_MIRROR/NAME when that is set (copied, never modified), else the official
# Ultralytics archive NAME.zip. Nothing is done when datasets/NAME already holds images.
set -euo pipefail
if [ $# -lt 1 ] || [ -z "$1" ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  echo "usage: tools/get_dataset.sh NAME [DEST_ROOT]   (NAME: coco8, coco128, shapes3, ...)" >&2; exit 2
fi
NAME=$1
ROOT=${2:-"$(cd "$(dirname "$0")/.." && pwd)/datasets"}
DEST="$ROOT/$NAME"
if [ -d "$DEST/images" ]; then echo "[get_dataset] $DEST already present"; exit 0; fi
mkdir -p "$ROOT"
if [ -n "${YOLO11_DATASETS_MIRROR:-}" ]; then
  SRC="$YOLO11_DATASETS_MIRROR/$NAME"
  [ -d "$SRC" ] || { echo "[get_dataset] error: $SRC does not exist (YOLO11_DATASETS_MIRROR=$YOLO11_DATASETS_MIRROR)" >&2; exit 1; }
  echo "[get_dataset] copying $SRC -> $DEST"
  cp -r "$SRC" "$DEST.partial"
  chmod -R u+w "$DEST.partial"
  mv "$DEST.partial" "$DEST"
else
  URL="https://github.com/ultralytics/assets/releases/download/v0.0.0/$NAME.zip"
  echo "[get_dataset] downloading $URL"
  TMP=$(mktemp -d)
  trap 'rm -rf "$TMP"' EXIT
  curl -fL --retry 3 -o "$TMP/$NAME.zip" "$URL" || {
    echo "[get_dataset] error: download failed; set YOLO11_DATASETS_MIRROR to a folder holding $NAME/" >&2; exit 1; }
  unzip -q "$TMP/$NAME.zip" -d "$TMP/x"
  mv "$TMP/x/$NAME" "$DEST"
fi
echo "[get_dataset] $NAME ready: $(find "$DEST/images" -type f | wc -l) images"
