"""timm and torchvision model specs (nadcore.nets.hub; issue 25): built from scratch for the
book's inputs, seeded, usable everywhere a model name is (build_model, compute_nads, the CLI), and
clear errors for what cannot work. Small widths and a handful of networks keep it fast."""

import socket
import sys
import warnings

import numpy as np
import pytest
import timm  # noqa: E402,F401  (the hub extra: the tests need it)
import torch

import nadcore.__main__ as cli
from nadcore import nads
from nadcore.book.nad_jobs import nad_config
from nadcore.nets import ModelSpecError, build_model, hub, spec_key
from nadcore.nets.hub import build_hub_model, parse_spec
from nadcore.runtime import threads

VIT = "timm:vit_tiny_patch16_224?patch_size=8&depth=2&embed_dim=48&num_heads=3"
CONVNEXT = "timm:convnext_atto?depths=(1,1,1,1)&dims=(8,16,32,64)&ls_init_value=1.0"
MIXER = "timm:mixer_s16_224?patch_size=4&num_blocks=2&embed_dim=32&hub_head_std=0.02"
RESNET = "torchvision:resnet18"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Nothing here may touch the network (no weights, no hub look-ups)."""

    def refuse(*a, **k):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(autouse=True)
def one_blas_thread():
    """NAD estimates end in 1024 x 1024 eigendecompositions: on a busy machine one BLAS thread is
    many times faster than several waiting on each other."""
    with threads(1, blas=True):
        yield


def build(spec, seed=0, **kw):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build_hub_model(spec, kw.pop("in_channels", 1), kw.pop("num_outputs", 1), **kw)


def input_grad(model, x):
    model.eval()
    x = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(model(x).sum(), x)
    return g


X = torch.randn(1, 1, 32, 32, generator=torch.Generator().manual_seed(0))


# ------------------------------------------------------------------ parsing
def test_parse_values():
    src, name, kw = parse_spec(
        "timm:vit_tiny_patch16_224?img_size=32&patch_size=4&depth=4&mlp_ratio=2.5"
        "&qkv_bias=False&class_token=true&init_values=None&depths=(1,1,2,1)"
        "&window_size=[4,4]&global_pool=avg&weight_init='jax'"
    )
    assert (src, name) == ("timm", "vit_tiny_patch16_224")
    assert kw == {
        "img_size": 32,
        "patch_size": 4,
        "depth": 4,
        "mlp_ratio": 2.5,
        "qkv_bias": False,
        "class_token": True,
        "init_values": None,
        "depths": (1, 1, 2, 1),
        "window_size": [4, 4],
        "global_pool": "avg",
        "weight_init": "jax",
    }
    assert parse_spec(" torchvision:resnet18 ") == ("torchvision", "resnet18", {})
    assert parse_spec("TIMM:convnext_atto?") == ("timm", "convnext_atto", {})


@pytest.mark.parametrize(
    "spec, words",
    [
        ("vit_tiny_patch16_224", "names no source"),
        ("timn:vit_tiny_patch16_224", "did you mean 'timm'"),
        ("timm:", "no model name"),
        ("timm:vit?depth", "key=value"),
        ("timm:vit?depth=1&depth=2", "given twice"),
        ("timm:vit?depth=", "empty value"),
        ("timm:hf-hub:timm/vit", "nothing is downloaded"),
        (42, "non-empty string"),
    ],
)
def test_parse_errors(spec, words):
    with pytest.raises(ModelSpecError, match=words):
        parse_spec(spec)


# ------------------------------------------------------------------ models
@pytest.mark.parametrize(
    "spec", [VIT, CONVNEXT, MIXER, "timm:MlpMixer?patch_size=4&num_blocks=1&embed_dim=32&hub_head_std=0.02", RESNET]
)
@pytest.mark.parametrize("batch", [1, 3])
def test_builds_scalar_output(spec, batch):
    m = build(spec).eval()
    with torch.no_grad():
        assert m(torch.randn(batch, 1, 32, 32)).shape == (batch, 1)


@pytest.mark.parametrize("spec", [VIT, CONVNEXT, MIXER, RESNET])
def test_seed_determines_parameters_and_gradient_varies(spec):
    a, b, c = build(spec, 5), build(spec, 5), build(spec, 6)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    assert any(not torch.equal(sa[k], sc[k]) for k in sa if sa[k].is_floating_point())
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # with 2+ threads CPU conv backward reduces in a varying order
    try:
        ga, gb, gc = input_grad(a, X), input_grad(b, X), input_grad(c, X)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(ga, gb)
    assert ga.abs().sum() > 0 and gc.abs().sum() > 0 and not torch.allclose(ga, gc)
    assert (ga != 0).float().mean() > 0.9  # no dead pixels


def test_global_rng_restored_and_seed_used_only_inside():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    build(VIT, 1)
    assert torch.equal(torch.get_rng_state(), state)


def test_vit_geometry_and_head():
    m = build(VIT)
    assert m.patch_embed.patch_size == (8, 8) and m.patch_embed.grid_size == (4, 4)
    assert m.head.weight.abs().sum() > 0  # timm ViT head is not zero-initialised


def test_mixer_patch_override_and_zero_head():
    m = build(MIXER)
    assert m.stem.patch_size == (4, 4) and len(m.blocks) == 2 and m.head.in_features == 32
    with pytest.warns(hub.ZeroGradientWarning, match="hub_head_std"):
        z = build(MIXER.replace("&hub_head_std=0.02", ""))
    assert torch.count_nonzero(input_grad(z, X)) == 0  # the reason for hub_head_std
    assert torch.count_nonzero(input_grad(m, X)) > 0


def test_convnext_layer_scale_override():
    m = build(CONVNEXT)
    gammas = [p for n, p in hub.layer_scale_parameters(m)]
    assert gammas and all(torch.all(g == 1.0) for g in gammas)
    d = build(CONVNEXT.replace("&ls_init_value=1.0", "") + "&hub_layer_scale=0.5")
    assert all(torch.all(p == 0.5) for _, p in hub.layer_scale_parameters(d))


def test_resmlp_hub_layer_scale():
    m = build("timm:resmlp_12_224?patch_size=4&num_blocks=1&embed_dim=16&hub_head_std=0.02&hub_layer_scale=1.0")
    assert {n for n, _ in hub.layer_scale_parameters(m)} == {"blocks.0.ls1", "blocks.0.ls2"}
    assert all(torch.all(p == 1.0) for _, p in hub.layer_scale_parameters(m))


def test_torchvision_stem_replaced():
    m = build(RESNET)
    assert (m.conv1.in_channels, m.conv1.kernel_size, m.conv1.stride, m.conv1.padding) == (1, (7, 7), (2, 2), (3, 3))
    assert m.conv1.bias is None and m.fc.out_features == 1
    m2 = build(RESNET, in_channels=5, num_outputs=2)
    assert m2.conv1.in_channels == 5 and m2.eval()(torch.randn(2, 5, 32, 32)).shape == (2, 2)
    # the 1-channel stem is the first input channel of the weights the model's own init drew
    full = build(RESNET, in_channels=3)
    assert torch.equal(m.conv1.weight, full.conv1.weight[:, :1])


def test_torchvision_fixed_keyword_override():
    m = build("torchvision:vit_b_16?patch_size=4&num_layers=1&num_heads=2&hidden_dim=32&mlp_dim=64&hub_head_std=0.02")
    assert m.patch_size == 4 and m.image_size == 32 and m.conv_proj.in_channels == 1
    assert torch.count_nonzero(input_grad(m, X)) > 0


def test_batchnorm_train_batch_and_eval_batch1():
    m = build("timm:convmixer_768_32?dim=16&depth=2&patch_size=4&kernel_size=3")
    m.train()
    out = m(torch.randn(128, 1, 32, 32))
    out.pow(2).mean().backward()
    assert out.shape == (128, 1)
    assert input_grad(m, X).abs().sum() > 0  # eval mode, batch 1


@pytest.mark.parametrize("spec", ["timm:vit_tiny_patch16_224?img_size=32&patch_size=4", "torchvision:resnet18"])
def test_cli_specs(spec):
    m = build(spec).eval()
    for b in (1, 2, 7):
        with torch.no_grad():
            assert m(torch.randn(b, 1, 32, 32)).shape == (b, 1)


def test_make_factory_with_nadcore():
    f = hub.make_factory(CONVNEXT)
    a = build_model(f, 1, 1, 32, seed=3)
    b = build_model(CONVNEXT, 1, 1, 32, seed=3)  # the spec string: the same network
    c = build_model(CONVNEXT, 1, 1, 32, seed=4)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), c.state_dict().values()))


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "spec, words",
    [
        ("timm:vit_tiny", r"unknown timm model 'vit_tiny'.*vit_tiny_patch16_224"),
        ("timm:convnxt_atto", r"unknown timm model.*convnext_atto"),
        ("torchvision:resnet19", r"unknown torchvision classification model 'resnet19'.*resnet18"),
        ("torchvision:fasterrcnn_resnet50_fpn", r"detection/segmentation/video"),
        (
            "timm:vit_tiny_patch16_224?patch_size=5",
            r"patch_size=5 does not divide the image size 32.*1, 2, 4, 8, 16, 32",
        ),
        ("timm:convmixer_768_32?dim=16&depth=1", r"7x7 stride 7.*does not divide the image size 32.*patch_size"),
        (
            "timm:swin_tiny_patch4_window7_224?window_size=16&depths=(1,1)&num_heads=(1,2)&embed_dim=16",
            r"window_size=16 is larger than the 8x8 token grid.*window_size=4",
        ),
        (
            "timm:swin_tiny_patch4_window7_224?depths=(1,1)&num_heads=(1,2)&embed_dim=16",
            r"window_size 7 does not tile the 8x8 token grid.*1, 2, 4, 8",
        ),
        (
            "torchvision:swin_t?embed_dim=16&depths=[1,1]&num_heads=[1,2]",
            r"window_size \[7, 7\].*8x8.*window_size=\[w,w\]",
        ),
        ("timm:convnext_atto?dimz=(8,16,32,64)", r"does not accept the keyword 'dimz'.*Did you mean dims"),
        ("timm:convnext_atto?img_size=64", r"does not accept the keyword 'img_size'"),
        ("torchvision:alexnet", r"failed on an input of shape \(2, 1, 32, 32\).*Output size is too small.*Hint"),
        ("timm:vit_tiny_patch16_224?patch_size=8&depth=1&global_pool=''", r"returned \(2, 17, 1\).*expected \(2, 1\)"),
        ("timm:convnext_atto?pretrained=True", r"built from scratch"),
        ("torchvision:resnet18?weights='DEFAULT'", r"built from scratch"),
        ("timm:convnext_atto?num_classes=10", r"set by the hub"),
        ("timm:convnext_atto?hub_head=1", r"unknown hub option.*hub_head_std"),
        ("timm:vit_tiny_patch16_224?patch_size=8&depth=1&hub_layer_scale=1.0", r"no layer-scale parameters"),
    ],
)
def test_errors(spec, words):
    with pytest.raises(ModelSpecError, match=words):
        build(spec)


def test_error_is_valueerror():
    assert issubclass(ModelSpecError, ValueError)


def test_timm_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)  # import timm -> ImportError
    with pytest.raises(ModelSpecError, match="pip install timm"):
        build("timm:convnext_atto")


@pytest.mark.parametrize(
    "spec, fix",
    [
        ("timm:convnext_atto?depths=(1,1,1,1)&dims=(8,16,32,64)", "ls_init_value=1.0"),
        ("timm:poolformer_s12?depths=(1,1,1,1)&dims=(8,16,32,64)", "layer_scale_init_values=1.0"),
        ("timm:resmlp_12_224?patch_size=4&num_blocks=1&embed_dim=16&hub_head_std=0.02", "hub_layer_scale=1.0"),
        ("timm:regnetx_002", "zero_init_last=False"),
    ],
)
def test_degenerate_init_warnings(spec, fix):
    with pytest.warns(hub.DegenerateGradientWarning, match=fix.replace("(", r"\(")):
        build(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error", hub.DegenerateGradientWarning)
        build(spec + ("&" if "?" in spec else "?") + fix)


def test_zero_init_last_regnet_gradient_mostly_zero():
    """Why the warning matters: zero-initialised residual BNs + strided 1x1 shortcuts."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = input_grad(build("timm:regnetx_002"), X)
    assert (g == 0).float().mean() > 0.99
    assert (input_grad(build("timm:regnetx_002?zero_init_last=False"), X) == 0).float().mean() < 0.01


def test_no_warning_for_normal_models():
    with warnings.catch_warnings():
        warnings.simplefilter("error", hub.DegenerateGradientWarning)
        for spec in (VIT, RESNET, MIXER, CONVNEXT):
            build(spec)


# ------------------------------------------------------------------ nadcore integration
def test_registry_dispatches_hub_prefixes_before_module_factory():
    """ "timm:NAME" must not be read as module "timm", attribute NAME (called factory(1, 1))."""
    m = build_model(VIT, seed=0)
    assert type(m).__name__ == "VisionTransformer" and m.patch_embed.grid_size == (4, 4)
    with pytest.raises(ModelSpecError, match="unknown timm model"):
        build_model("timm:create_model")
    with pytest.raises(ModelSpecError, match="built from scratch"):
        build_model("torchvision:resnet18?weights='IMAGENET1K_V1'")


def test_spec_key_names_the_library_version():
    key = spec_key(VIT)
    assert key == {"model": VIT, "library": f"timm {timm.__version__}"}
    assert nad_config(VIT, "gradient", 8, 0)["library"].startswith("timm ")
    assert spec_key(RESNET)["library"].startswith("torchvision ")


@pytest.mark.parametrize("spec", [VIT, MIXER, CONVNEXT, RESNET])
def test_compute_nads_of_hub_models(spec):
    """Gradient NADs of 16 networks: seeded (twice the same), unit rows, and not isotropic."""
    a = nads.compute_nads(spec, (1, 32, 32), 16, seed=1, method="gradient", device="cpu", lanes=1)
    b = nads.compute_nads(spec, (1, 32, 32), 16, seed=1, method="gradient", device="cpu", lanes=2)
    assert a.meta["model"] == spec and a.meta["networks"] == 16
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=1e-6, atol=1e-12 * a.eigenvalues[0])
    np.testing.assert_allclose(np.linalg.norm(a.nads[:4], axis=1), 1.0, rtol=1e-6)
    assert a.eigenvalues[0] > 0 and a.eigenvalues[16] < 1e-9 * a.eigenvalues[0]  # rank <= 16 networks


def test_cli_nads_compare_show(tmp_path, capsys):
    """The README's commands, with fewer networks and a smaller ViT."""
    v, r = tmp_path / "v.npz", tmp_path / "r.npz"
    assert cli.main(["nads", "--model", VIT, "--networks", "8", "--method", "gradient", "--out", str(v)]) == 0
    assert cli.main(["nads", "--model", RESNET, "--networks", "8", "--method", "gradient", "--out", str(r)]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(v), str(r), "--k", "1,4"]) == 0
    out = capsys.readouterr().out
    assert VIT in out and RESNET in out and "overlap" in out
    png = tmp_path / "s.png"
    assert cli.main(["show", str(v), str(r), "--out", str(png)]) == 0
    assert png.stat().st_size > 1000


def test_cli_bad_spec_says_what_to_do(tmp_path, capsys):
    rc = cli.main(
        [
            "nads",
            "--model",
            "timm:vit_tiny_patch16_224?patch_size=5",
            "--networks",
            "4",
            "--out",
            str(tmp_path / "x.npz"),
        ]
    )
    assert rc == 2 and "Override patch_size with one of: 1, 2, 4, 8, 16, 32" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()


def test_chapter_nads_takes_a_hub_spec(tmp_path, monkeypatch):
    """ch.nads (every chapter's NADs) with a timm spec: cached, and served from the cache again."""
    from nadcore.book import setup

    monkeypatch.setenv("NADCORE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("NADBOOK_OUTPUT", str(tmp_path / "out"))
    ch = setup("02_nads", profile="smoke", seed=0, device="cpu", model=VIT)
    r, text = ch.nads(VIT, "gradient", networks=8)
    again, _ = ch.nads(VIT, "gradient", networks=8)
    assert r.meta["model"] == VIT and "8 networks" in text
    np.testing.assert_array_equal(r.nads, again.nads)
    assert any((tmp_path / "cache").rglob("meta.json"))
