"""kustomize-controller's part: the generated kustomization, the build, post-build substitution,
and its render-cache keys.
"""
