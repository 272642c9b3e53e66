import io

import numpy as np
import pytest
from PIL import Image

from arena.core import context_image
from arena.core.blobs import BlobStore
from arena.core.context_image import file_png, model_png
from arena.core.images import (MIN_PIXELS, ImageError, decode_image, encode_png, fit_for_model, load_image,
                          smart_resize)


@pytest.mark.parametrize("h, w, factor, max_pixels, expected", [
    (1080, 1920, 28, None, (1092, 1932)),
    (1080, 1920, 32, None, (1088, 1920)),
    (768, 1366, 28, None, (756, 1372)),
    (10, 10, 28, None, (56, 56)),
    (1080, 1920, 28, 1280 * 28 * 28, (728, 1316)),
])
def test_smart_resize_matches_qwen_vl_utils(h, w, factor, max_pixels, expected):
    kwargs = {"max_pixels": max_pixels} if max_pixels else {}
    assert smart_resize(h, w, factor, **kwargs) == expected


def test_smart_resize_rejects_extreme_aspect_ratio():
    with pytest.raises(ImageError, match="aspect ratio"):
        smart_resize(10, 2500)


def test_fit_for_model_bounds_pixels():
    image = Image.new("RGB", (3840, 2160))
    fitted = fit_for_model(image, max_pixels=1280 * 28 * 28)
    assert fitted.width * fitted.height <= 1280 * 28 * 28
    assert fitted.width % 28 == 0 and fitted.height % 28 == 0


def test_broken_image_error_names_the_file(tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(ImageError, match="broken.png"):
        decode_image(bad)
    with pytest.raises(ImageError, match="no such image"):
        decode_image(tmp_path / "missing.png")
    with pytest.raises(ImageError, match="blob-x"):
        decode_image(b"garbage", "blob-x")


def test_blob_store_is_content_addressed(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    image = Image.new("RGB", (20, 10), (1, 2, 3))
    first = store.put_image(image)
    second = store.put_image(image.copy())
    assert first == second and first.startswith("sha256:") and first.endswith(".png")
    assert store.get_image(first).tobytes() == image.tobytes()  # lossless, whatever the PNG settings
    assert store.get_image(first).size == (20, 10)
    assert len(list((tmp_path / "blobs").rglob("*.png"))) == 1
    with pytest.raises(ValueError):
        store.path("sha256:../../etc/passwd")


def _pixels(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image


def test_model_images_are_lossless_and_files_that_fit_go_as_they_are(tmp_path):
    noisy = Image.fromarray(np.random.default_rng(0).integers(0, 256, (300, 500, 3), dtype=np.uint8))
    png = model_png(noisy, 28, MIN_PIXELS, 1280 * 28 * 28)
    fitted = fit_for_model(noisy, 28, MIN_PIXELS, 1280 * 28 * 28)
    assert _pixels(png).size == (504, 308) and _pixels(png).tobytes() == fitted.tobytes()
    exact = tmp_path / "exact.png"
    noisy.crop((0, 0, 504 - 224, 280)).save(exact, compress_level=9)  # 280x280: already what the model gets
    assert file_png(exact, 28, MIN_PIXELS, 1280 * 28 * 28) == exact.read_bytes()
    odd = tmp_path / "odd.png"
    noisy.crop((0, 0, 290, 280)).save(odd)  # 290 wide: resized to 280, so encoded afresh
    assert file_png(odd, 28, MIN_PIXELS, 1280 * 28 * 28) is None
    assert _pixels(model_png(load_image(odd).image, 28, MIN_PIXELS, 1280 * 28 * 28)).size == (280, 280)
    alpha = tmp_path / "alpha.png"
    noisy.crop((0, 0, 280, 280)).convert("RGBA").save(alpha)  # fits, but alpha: sent as the RGB the model gets
    assert file_png(alpha, 28, MIN_PIXELS, 1280 * 28 * 28) is None
    sent = _pixels(model_png(load_image(alpha).image, 28, MIN_PIXELS, 1280 * 28 * 28))
    assert sent.mode == "RGB" and sent.tobytes() == noisy.crop((0, 0, 280, 280)).tobytes()
    jpeg, broken = tmp_path / "exact.jpg", tmp_path / "broken.png"
    noisy.crop((0, 0, 280, 280)).save(jpeg)
    broken.write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    assert file_png(jpeg, 28, MIN_PIXELS, 1280 * 28 * 28) is None and file_png(broken, 28, MIN_PIXELS, 1) is None


def test_a_stored_image_that_fits_the_model_is_sent_as_its_blob_bytes(tmp_path, monkeypatch):
    encoded = []
    monkeypatch.setattr(context_image, "encode_png", lambda image, *a, **k: encoded.append(image.size) or
                        encode_png(image, *a, **k))
    store = BlobStore(tmp_path / "blobs")
    crop = Image.fromarray(np.random.default_rng(1).integers(0, 256, (288, 768, 3), dtype=np.uint8))
    blob_id = store.put_image(crop)  # 768x288: what the crop tool returns, and what factor 32 sends as it is
    assert model_png(crop, 32, 65_536, 8_294_400) == store.get(blob_id)
    assert encoded == [(768, 288)]  # one encoding for the blob and the model
    assert store.put_image(crop) == blob_id and encoded == [(768, 288)]
    resized = model_png(crop, 28, MIN_PIXELS, 1280 * 28 * 28)  # 756x280 for the model: encoded afresh
    assert encoded == [(768, 288), (756, 280)] and _pixels(resized).size == (756, 280)
    copy = crop.copy()  # another object, equal pixels: encoded again (kept by identity, never by equality)
    assert store.put_image(copy) == blob_id and encoded == [(768, 288), (756, 280), (768, 288)]
