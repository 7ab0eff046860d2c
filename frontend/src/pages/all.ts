// Every dedicated page registers itself on import. One line per page.
import "./profile_summary/profile_summary_page";
import "./compare/compare_page";
