"""Generated protobuf stubs (see proto/)."""
