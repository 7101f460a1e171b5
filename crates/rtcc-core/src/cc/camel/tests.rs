//! Whole-controller tests of Camel through the trait.
