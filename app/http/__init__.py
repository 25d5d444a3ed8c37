"""All of FastAPI and Starlette: the key-operation declaration and its handlers, body reading
(JSON and raw), the batch envelope, dependencies, middleware, problem answers and the OpenAPI
document."""
