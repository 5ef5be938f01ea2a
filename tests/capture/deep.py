"""Models for the windowed-capture tests: a deep stack of Linear+ReLU built in code."""
import torch

DEPTH = 40
WIDTH = 64


def deep_mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    layers = []
    for _ in range(DEPTH):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).eval()
    with torch.no_grad():
        for m in model:
            if isinstance(m, torch.nn.Linear):
                m.weight.mul_(1.4)    # keep activations alive through 40 layers
    return model
