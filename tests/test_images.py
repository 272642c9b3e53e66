import pytest
from PIL import Image

from arena.blobs import BlobStore
from arena.images import ImageError, decode_image, encode_png, fit_for_model, open_image, smart_resize


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
        open_image(bad)
    with pytest.raises(ImageError, match="no such image"):
        open_image(tmp_path / "missing.png")
    with pytest.raises(ImageError, match="blob-x"):
        decode_image(b"garbage", "blob-x")


def test_blob_store_is_content_addressed(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    image = Image.new("RGB", (20, 10), (1, 2, 3))
    first = store.put_image(image)
    second = store.put_image(image.copy())
    assert first == second and first.startswith("sha256:") and first.endswith(".png")
    assert store.get(first) == encode_png(image)
    assert store.get_image(first).size == (20, 10)
    assert len(list((tmp_path / "blobs").rglob("*.png"))) == 1
    with pytest.raises(ValueError):
        store.path("sha256:../../etc/passwd")
