#!/usr/bin/env bash
# What tests/k8s needs in CI: the Kubernetes OpenAPI schemas (kubernetes-validate), jsonschema
# for the operator CRDs in tests/k8s/crds/, kubectl for `kubectl kustomize`, and checkov (PyPI)
# for tests/k8s/test_checkov.py.
# Safe to run again: pip does nothing when the requirements are already met.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
# kubernetes-validate must ship the schemas of K8S_VERSION in tests/k8s/validate.py (1.33);
# version X.Y of the package ships Kubernetes 1.25 .. X.Y.
"$PYTHON" -m pip install --disable-pip-version-check --quiet \
    "kubernetes-validate>=1.33" "jsonschema>=4.20" "pyyaml>=6.0"

"$PYTHON" - <<'EOF'
import kubernetes_validate
import yaml

# Fails loudly if the installed package lacks the pinned version's schemas.
kubernetes_validate.validate(
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ci"}}, "1.33", strict=True
)
print(f"kubernetes-validate {kubernetes_validate.__version__}: Kubernetes 1.33 schemas present")
if not hasattr(yaml, "CSafeLoader"):
    print("warning: PyYAML has no libyaml (CSafeLoader); loading the CRDs will be ~10x slower")
EOF

# checkov pins many packages (packaging, networkx, boto3, ...) that would change router's own
# environment, so it gets a virtualenv of its own, where tests/k8s/checkov.py looks for it.
CHECKOV_VERSION="3.3.30"
CHECKOV_VENV="${CHECKOV_VENV:-$HOME/.local/share/router-checkov}"
if [ "$("$CHECKOV_VENV/bin/checkov" --version 2>/dev/null)" != "$CHECKOV_VERSION" ]; then
    "$PYTHON" -m venv "$CHECKOV_VENV"
    "$CHECKOV_VENV/bin/python" -m pip install --disable-pip-version-check --quiet \
        "checkov==$CHECKOV_VERSION"
fi
echo "checkov $("$CHECKOV_VENV/bin/checkov" --version) in $CHECKOV_VENV"

if ! command -v kubectl >/dev/null 2>&1; then
    echo "error: kubectl not found on PATH. tests/k8s runs 'kubectl kustomize' to build each" >&2
    echo "cluster folder; install kubectl >= 1.27 (it bundles kustomize v5), e.g. from" >&2
    echo "https://kubernetes.io/docs/tasks/tools/install-kubectl-linux/" >&2
    exit 1
fi
if ! kubectl kustomize --help >/dev/null 2>&1; then
    echo "error: $(command -v kubectl) has no 'kustomize' subcommand; install a newer kubectl" >&2
    exit 1
fi
echo "kubectl: $(kubectl version --client 2>/dev/null | head -n 2 | tr '\n' ' ')"
