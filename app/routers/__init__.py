"""One module per family: request and response models, and route declarations that call
`app.ops`."""
