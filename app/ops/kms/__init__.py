"""AWS KMS's API (the JSON protocol of `TrentService`) translated onto the service's keys and
verbs, free of any web framework; `app.http.kms` carries it over HTTP (SigV4, the frame).

An action is one declared function in one of the modules named by `actions.MODULES`, one module
per group of actions, as `keys.describe_key` is:

    @action("DescribeKey")
    async def describe_key(call: KmsCall, request: DescribeKeyRequest) -> dict[str, Any]:
        ...

The request model (the function's second parameter) is AWS's request shape: its fields are the
members of AWS's, in AWS's spelling; a body that does not fit it is a `ValidationException`.
The answer is the JSON object AWS's response shape describes (bytes as base64 strings, dates as
epoch seconds), `{}` for an action AWS answers without members. Errors are `KmsError`s, or the
native problems and store errors, which `errors.kms_error` names in AWS's terms. `KmsCall`
resolves a key id, alias or ARN to a key's native name, checks the token's scope and notes the
audit record: each action is recorded as the native operation it runs (`keys_create_key`,
`aead_encrypt`) with the action's name in its details, as Transit's paths are.
"""
