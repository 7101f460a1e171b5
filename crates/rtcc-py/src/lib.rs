//! rtcc._native (skeleton)
