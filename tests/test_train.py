"""nadcore.train: the original SGD recipe (its one update, sgd_step, is torch.optim.SGD with
clip_grad_norm_), and train_many == a loop of train_classifier."""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

from nadcore.chapters.linear_separability.quantities import iterations_to_loss
from nadcore.data import directional_train_test, fourier_basis_vector
from nadcore.kernels.cpu import keep_freed_memory
from nadcore.nets import build_model
from nadcore.train import lr_at, sgd_step, supports_train_many, train_classifier, train_many


def _data(k, n=256, n_test=200, seed=0, sigma=3.0):
    return directional_train_test(
        fourier_basis_vector(0, k), n, n_test, sigma, 1.0, generator=torch.Generator().manual_seed(seed)
    )


def test_learning_rate_schedule_is_the_original_linear_decay():
    epochs, nb, max_lr = 3, 7, 0.5
    lrs = [lr_at(i, nb, epochs, max_lr) for i in range(epochs * nb)]
    ref = [np.interp([e + (b + 1) / nb], [0, epochs], [max_lr, 0])[0] for e in range(epochs) for b in range(nb)]
    np.testing.assert_allclose(lrs, ref)
    assert lrs[-1] == 0.0 and lrs[0] < max_lr and np.all(np.diff(lrs) < 0)


def test_iterations_to_loss():
    loss = np.r_[np.ones(10), np.full(10, 0.01)]
    assert iterations_to_loss(loss, 0.1, window=1) == 11
    assert iterations_to_loss(loss, 0.1, window=4) == 14
    assert iterations_to_loss(np.ones(5), 0.1) is None
    np.testing.assert_array_equal(iterations_to_loss(np.stack([loss, np.ones(20)]), 0.1, 1), [11, -1])


@pytest.mark.parametrize("momentum, weight_decay, clip", [(0.0, 0.0, 0.5), (0.9, 1e-3, 0.5), (0.9, 0.0, None)])
def test_sgd_step_is_torch_sgd_after_clipping_each_models_norm(momentum, weight_decay, clip):
    """sgd_step on M stacked models == torch.optim.SGD (no dampening, no Nesterov) after
    nn.utils.clip_grad_norm_, for each model on its own, over several steps (momentum buffers)."""
    g = torch.Generator().manual_seed(0)
    M, shapes = 3, [(4, 5), (5,), (2, 3, 3)]
    params = [torch.randn(M, *s, generator=g) for s in shapes]
    refs = [[p[i].clone().requires_grad_(True) for p in params] for i in range(M)]
    opts = [torch.optim.SGD(r, lr=0.1, momentum=momentum, weight_decay=weight_decay) for r in refs]
    bufs = None
    for step in range(4):
        lr = 0.3 / (step + 1)
        # gradients of very different norms: some models clipped, some not
        grads = [
            torch.randn(M, *s, generator=g) * torch.tensor([0.01, 1.0, 30.0]).view(M, *[1] * len(s)) for s in shapes
        ]
        bufs = sgd_step(
            params, grads, lr, momentum=momentum, weight_decay=weight_decay, clip_grad_norm=clip, buffers=bufs
        )
        for i, (r, opt) in enumerate(zip(refs, opts)):
            for q, gr in zip(r, grads):
                q.grad = gr[i].clone()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(r, clip)
            for group in opt.param_groups:
                group["lr"] = lr
            opt.step()
        for j, p in enumerate(params):
            for i in range(M):  # the same operations in the same order: the same bits
                assert torch.equal(p[i], refs[i][j].detach()), (step, i, j)
    if momentum == 0:
        assert all(b is None for b in bufs)


def test_train_classifier_equals_torch_sgd_training():
    """train_classifier with sgd_step trains as the recipe did with torch.optim.SGD and
    clip_grad_norm_: the same batches, rates and updates, the same parameters up to rounding."""
    x, y, _, _ = _data(3, n=200, n_test=10)
    kw = dict(epochs=2, batch_size=64, max_lr=0.5, momentum=0.9, weight_decay=1e-3)
    model = build_model("lenet", seed=4)
    ref = copy.deepcopy(model)
    r = train_classifier(model, x, y, generator=torch.Generator().manual_seed(5), device="cpu", **kw)
    g = torch.Generator().manual_seed(5)
    opt = torch.optim.SGD(ref.parameters(), lr=kw["max_lr"], momentum=0.9, weight_decay=1e-3)
    t = (y > 0).float()
    losses, nb, it = [], 4, 0
    ref.train()
    for _ in range(2):
        perm = torch.randperm(len(x), generator=g)
        for b in range(nb):
            idx = perm[b * 64 : (b + 1) * 64]
            loss = nn.functional.binary_cross_entropy_with_logits(ref(x[idx])[:, 0], t[idx])
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
            for group in opt.param_groups:
                group["lr"] = lr_at(it, nb, 2, kw["max_lr"])
            opt.step()
            losses.append(loss.item())
            it += 1
    np.testing.assert_allclose(r.iter_loss, losses, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7, msg=name)


def test_train_classifier_logreg_learns_separable_data():
    torch.manual_seed(0)
    x, y, xt, yt = _data(2, n=1024, n_test=500, sigma=1.0)
    r = train_classifier(
        build_model("logreg"),
        x,
        y,
        epochs=6,
        max_lr=0.5,
        generator=torch.Generator().manual_seed(0),
        x_test=xt,
        y_test=yt,
    )
    assert r.iter_loss.shape == (6 * 8,) and r.epoch_loss.shape == (6,)
    assert r.train_acc > 0.95 and r.test_acc > 0.8
    assert r.epoch_loss[-1] < r.epoch_loss[0]
    assert r.config["loss"] == "logistic"


def test_train_classifier_multiclass_and_label_checks():
    torch.manual_seed(0)
    x = torch.randn(200, 1, 32, 32)
    y = torch.randint(0, 10, (200,))
    m = build_model("lenet", 1, 10)
    r = train_classifier(
        m,
        x,
        y,
        epochs=1,
        batch_size=64,
        max_lr=0.05,
        momentum=0.9,
        weight_decay=5e-4,
        generator=torch.Generator().manual_seed(0),
        x_test=x[:50],
        y_test=y[:50],
    )
    assert r.config["loss"] == "cross_entropy" and 0 <= r.test_acc <= 1 and r.iterations == 4
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="cross-entropy labels"):
        train_classifier(build_model("lenet", 1, 10), x, y * 2 - 1, epochs=1, max_lr=0.1, generator=g)
    with pytest.raises(ValueError, match="binary labels"):
        train_classifier(build_model("logreg"), x, y, epochs=1, max_lr=0.1, generator=g)
    with pytest.raises(TypeError, match="explicit torch.Generator"):
        train_classifier(build_model("logreg"), x, y, epochs=1, max_lr=0.1, generator=None)


def _many_vs_loop(arch, M=3, **kw):
    data = [_data(2 * i + 1, n=200, n_test=100, seed=i) for i in range(M)]
    models = [build_model(arch, seed=(1, i)) for i in range(M)]
    copies = [copy.deepcopy(m) for m in models]
    settings = dict(epochs=2, batch_size=64, **{"max_lr": 0.5, **kw})
    loop = [
        train_classifier(
            copies[i],
            data[i][0],
            data[i][1],
            generator=torch.Generator().manual_seed(i),
            x_test=data[i][2],
            y_test=data[i][3],
            **settings,
        )
        for i in range(M)
    ]
    many = train_many(
        models,
        [d[0] for d in data],
        [d[1] for d in data],
        generators=[torch.Generator().manual_seed(i) for i in range(M)],
        xs_test=[d[2] for d in data],
        ys_test=[d[3] for d in data],
        **settings,
    )
    for a, b, ma, mb in zip(loop, many, copies, models):
        np.testing.assert_allclose(a.iter_loss, b.iter_loss, rtol=1e-4, atol=1e-5)
        assert abs(a.test_acc - b.test_acc) <= 1 / 100 + 1e-9
        assert abs(a.train_acc - b.train_acc) <= 1 / 200 + 1e-9
        for p, q in zip(ma.parameters(), mb.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    return loop, many


@pytest.mark.parametrize("arch", ["lenet", "logreg", "mlp"])
def test_train_many_equals_a_loop_of_train_classifier(arch):
    # momentum and weight decay on, and a large max_lr so that clipping (0.5) is active
    _many_vs_loop(arch, momentum=0.9, weight_decay=1e-3)


def test_train_many_clips_each_model_on_its_own_norm():
    # plain SGD, no clipping vs clipping: the per-model clipping matters and is matched
    loop, many = _many_vs_loop("lenet", M=2, clip_grad_norm=None, max_lr=0.05)
    loop_c, _ = _many_vs_loop("lenet", M=2, clip_grad_norm=0.5, max_lr=0.05)
    assert not np.allclose(loop[0].iter_loss, loop_c[0].iter_loss)


class _BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.fc = nn.Linear(2 * 30 * 30, 1)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.c(x))).flatten(1))


def test_train_many_falls_back_to_a_loop_for_batchnorm():
    assert supports_train_many(build_model("lenet")) and not supports_train_many(_BNNet())
    x, y, xt, yt = _data(1, n=64, n_test=32)
    res = train_many(
        [_BNNet(), _BNNet()],
        [x, x],
        [y, y],
        epochs=1,
        max_lr=0.1,
        generators=[torch.Generator().manual_seed(0)] * 2,
        xs_test=[xt, xt],
        ys_test=[yt, yt],
    )
    assert len(res) == 2 and all(0 <= r.test_acc <= 1 for r in res)
    with pytest.raises(ValueError):
        train_many(
            [_BNNet()], [x], [y], epochs=1, max_lr=0.1, generators=[torch.Generator().manual_seed(0)], fallback=False
        )


def test_bf16_autocast_trains_a_batchnorm_network_close_to_float32_and_says_so():
    x, y, xt, yt = _data(1, n=256, n_test=128, sigma=0.5)
    runs = {}
    for ac in (None, "bf16"):
        torch.manual_seed(0)
        net = _BNNet()
        runs[ac] = train_many(
            [net],
            [x],
            [y],
            epochs=4,
            batch_size=32,
            max_lr=0.1,
            generators=[torch.Generator().manual_seed(0)],
            xs_test=[xt],
            ys_test=[yt],
            autocast=ac,
        )[0]
        assert net.c.weight.dtype == torch.float32 and net.bn.running_mean.dtype == torch.float32
    fp32, bf16 = runs[None], runs["bf16"]
    assert fp32.config["autocast"] is None and bf16.config["autocast"] == "bf16"
    assert bf16.iter_loss.dtype == np.float32 and np.isfinite(bf16.iter_loss).all()
    assert abs(bf16.iter_loss[0] - fp32.iter_loss[0]) < 0.01  # the same first step up to bf16 rounding
    assert not np.array_equal(bf16.iter_loss, fp32.iter_loss)  # bf16 did change the numbers
    assert fp32.train_acc > 0.8 and abs(bf16.train_acc - fp32.train_acc) < 0.1
    with pytest.raises(ValueError, match="vectorised, in float32"):
        train_many(
            [build_model("lenet")],
            [x],
            [y],
            epochs=1,
            max_lr=0.1,
            generators=[torch.Generator().manual_seed(0)],
            autocast="bf16",
        )
    with pytest.raises(ValueError, match="autocast must be one of"):
        train_classifier(_BNNet(), x, y, epochs=1, max_lr=0.1, generator=torch.Generator(), autocast="fp16")


def test_triangular_schedule_and_train_many_follow_it():
    lrs = np.array([lr_at(i, 10, 5, 0.2, "triangular") for i in range(50)])
    assert abs(lrs.max() - 0.2) < 1e-12 and lrs.argmax() == 19 and lrs[-1] == 0.0
    with pytest.raises(ValueError):
        lr_at(0, 10, 5, 0.2, "cosine")
    _many_vs_loop("logreg", M=2, schedule="triangular", momentum=0.9)


class _DropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.drop, self.fc2 = nn.Linear(1024, 16), nn.Dropout(0.5), nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(self.drop(torch.relu(self.fc1(x.flatten(1)))))


def test_dropout_training_is_reproducible_and_leaves_the_global_rng_alone():
    x, y, xt, yt = _data(1, n=128, n_test=32)
    runs = []
    for _ in range(2):
        with torch.random.fork_rng():
            torch.manual_seed(7)
            m = _DropNet()
        state = torch.get_rng_state()
        train_classifier(m, x, y, epochs=2, max_lr=0.1, generator=torch.Generator().manual_seed(3))
        assert torch.equal(torch.get_rng_state(), state)
        torch.manual_seed(999)  # whatever the global state, the run is the same
        runs.append([p.detach().clone() for p in m.parameters()])
    for p, q in zip(*runs):
        assert torch.equal(p, q)


def test_training_keeps_freed_memory_in_the_heap():
    """train_many on the CPU switches glibc's malloc to keeping freed blocks (no page faults at
    every step); the setting is idempotent and reports whether it is active."""
    import resource
    import sys

    x, y = torch.randn(2, 256, 1, 32, 32), (torch.rand(2, 256) > 0.5).float() * 2 - 1
    run = lambda: train_many(
        [build_model("lenet", seed=s) for s in (1, 2)],
        x,
        y,
        epochs=1,  # noqa: E731
        max_lr=0.1,
        generators=[torch.Generator().manual_seed(s) for s in (1, 2)],
        device="cpu",
    )
    run()
    active = keep_freed_memory()
    assert active == keep_freed_memory()
    if sys.platform.startswith("linux"):
        assert active
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        run()
        # a few hundred faults at most (new small objects), not thousands per step
        assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before < 2000


def test_channels_last_is_skipped_where_it_crashes_and_training_still_runs():
    from nadcore.runtime import threads
    from nadcore.train.loops import channels_last_applies

    narrow, wide = build_model("resnet18?width=4", 1, 2, seed=0), build_model("resnet18?width=8", 1, 2, seed=0)
    assert not channels_last_applies(narrow, "cpu") and channels_last_applies(wide, "cpu")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 32, 32, generator=g)
    y = torch.randint(0, 2, (64,), generator=g)
    with threads(1):  # the layout that crashed the process (ResNet-18 at width 4, one thread)
        r = train_classifier(narrow, x, y, epochs=1, batch_size=32, max_lr=0.01, generator=g, channels_last=True)
    assert np.isfinite(r.train_loss)
