"""The families of sugar `transforms.desugar` rewrites, one module each."""
