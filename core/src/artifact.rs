//! Artifacts: full output streams spilled to files, addressed as `artifact://<id>`.
