"""`sparring generate`: test scenarios written by a model from requirements, an agent's
configuration (system prompt, Parlant guidelines and journeys, OpenAPI or tool lists) or
existing tests. `sources` reads the inputs, `scenarios` asks the model and shapes its
answer; the CLI validates each scenario with the loader and writes the file.
"""
