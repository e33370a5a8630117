fn main() {
    let _ = std::any::type_name::<pi_agent_rust::session::SessionManager>;
}
