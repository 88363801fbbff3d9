"""Model maker: writes onnxruntime-genai packages (model-builder layout) from llama2.c
checkpoints or seeded random weights. Run through tools/make_model.py."""
