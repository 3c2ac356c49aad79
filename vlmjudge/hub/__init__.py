"""The methods on the Hugging Face Hub: evaluate modules by bare name (`evaluate_modules`), metric
Spaces staged and pushed (`spaces`), the Gradio app each Space runs (`app`), and the metric folders
they all read (`folders`)."""
