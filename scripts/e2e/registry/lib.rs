//! Empty: this package only exists to build crabka-schema-registry's binary
//! (see build.sh).
