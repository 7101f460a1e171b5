//! TCP bulk flows for the simulator. (Being written.)
