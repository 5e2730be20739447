"""Helpers of the Kubernetes emitter (router.emit.kubernetes), one concern per module.

names: valid, stable Kubernetes names · yamlio: the one YAML writer · context: what every
object of a placement shares (namespace, labels) · pod: containers and pod templates ·
serving: Deployment/Service/HPA/PDB or a KServe InferenceService · jobs: Job, Indexed Job,
JobSet, PyTorchJob and Volcano Job.
"""
