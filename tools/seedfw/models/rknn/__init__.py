"""NPU models with Rockchip's rknn-toolkit2 (docs/models.md).

venv.py           the toolkit's own venv (invoke setup / doctor), from requirements.lock
compile.py        host side: settings from models.yaml + Kconfig, content-addressed cache, model card
driver.py         runs INSIDE the venv: ONNX -> .rknn, simulator vs ONNX Runtime FP32 (JSON in/out)
prepare.py        runs INSIDE the venv: trains the digits classifier, renders text images
wheels.py         pretrained ONNX files inside pinned wheels (sha256 of wheel and of each file)
rknn_file.py      the .rknn reader (header, payload length, trailing JSON, target)
part.py           the build part (models.compile -> images/models.json), SBOM records
"""
