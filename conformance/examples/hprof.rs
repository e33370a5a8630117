use session_conformance::harness::Harness;
use session_reference::model::Profile;
fn main() {
    let filter = std::env::args().nth(1).unwrap();
    let reps: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let serve = std::env::args().nth(3).is_some();
    let h = Harness::new("corpus/cases").profile(Profile::Omp).jobs(1).filter(&filter).unwrap().preload().unwrap();
    let argv: Vec<String> = ["target/release/session-conformance", "serve", "--profile", "omp"].iter().map(|s| s.to_string()).collect();
    let t = std::time::Instant::now();
    for _ in 0..reps { let r = if serve { h.run_process(&argv, false) } else { h.run_reference() }; assert!(r.is_ok()); }
    eprintln!("{:?} per rep", t.elapsed() / reps as u32);
}
