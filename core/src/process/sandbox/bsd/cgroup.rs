//! No cgroups outside Linux: a session's process count is never watched
//! (its limit is reported as not applied when the sandbox is made).

/// A session's `pids` cgroup: none can exist here.
#[derive(Debug)]
pub enum PidsCgroup {}

impl PidsCgroup {
    pub fn of_session(_name: &str, _limit: u64) -> Option<PidsCgroup> {
        None
    }

    pub fn limit(&self) -> u64 {
        match *self {}
    }

    pub fn refused(&self) -> Option<u64> {
        match *self {}
    }

    pub fn at_limit(&self) -> bool {
        match *self {}
    }
}

/// A cgroup of a session's: none can exist here.
#[derive(Debug)]
pub enum Cgroup {}

impl Cgroup {
    pub fn remove(&self) {
        match *self {}
    }
}
