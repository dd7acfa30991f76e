//! After warm-up, pushing through a sink allocates nothing, with or without
//! an artifact file (its own test binary: it replaces the allocator). Only
//! the measuring thread's allocations count: the test harness's own thread
//! allocates whenever it likes (it did, in about half the runs).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use conch_core::artifact::ArtifactStore;
use conch_core::output::{OutputSink, SinkOptions};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set on the thread whose allocations are counted.
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTED.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn chunk(i: usize) -> Vec<u8> {
    let line = format!("\x1b[32m✓\x1b[0m test {i} réussi — 测试 🚀\r\n");
    line.repeat(500).into_bytes()
}

fn pushes_allocate_nothing_after_warm_up(artifact: bool) {
    let dir = std::env::temp_dir().join(format!(
        "conch-output-alloc-{}-{artifact}",
        std::process::id()
    ));
    let store = ArtifactStore::new(&dir);
    let mut sink = OutputSink::new(SinkOptions {
        artifact: artifact.then(|| store.allocate("bash").unwrap().into()),
        ..SinkOptions::default()
    });
    let chunks: Vec<Vec<u8>> = (0..4).map(chunk).collect();
    for chunk in &chunks {
        sink.push(chunk);
    }
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..50 {
        for chunk in &chunks {
            sink.push(chunk);
        }
    }
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
    let summary = sink.dump(None);
    assert!(summary.truncated);
    assert_eq!(summary.artifact_id.is_some(), artifact);
    assert_eq!(allocations, 0, "allocations while pushing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sink_pushes_do_not_allocate() {
    COUNTED.with(|c| c.set(true));
    pushes_allocate_nothing_after_warm_up(false);
    pushes_allocate_nothing_after_warm_up(true);
}
