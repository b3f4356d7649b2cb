// NacosLauncher starts a standalone Nacos 3.1 server from the published server and console jars,
// which do not include the official bootstrap module. It starts the core context, then the
// server web context (Open API and gRPC) and the console context as children of it, the way the
// official "merged" deployment does, and exits the JVM when any of them fails to start: Nacos's
// thread pools would otherwise keep a half-started server alive.
//
// Compiled by scripts/services.sh with `javac -cp 'lib/*'`; run with -Dnacos.standalone=true.
import com.alibaba.nacos.NacosServerBasicApplication;
import com.alibaba.nacos.NacosServerWebApplication;
import com.alibaba.nacos.console.NacosConsole;
import com.alibaba.nacos.core.listener.startup.NacosStartUp;
import com.alibaba.nacos.core.listener.startup.NacosStartUpManager;
import com.alibaba.nacos.sys.env.DeploymentType;
import com.alibaba.nacos.sys.env.EnvUtil;
import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

public final class NacosLauncher {

    private NacosLauncher() {
    }

    public static void main(String[] args) {
        try {
            EnvUtil.setDeploymentType(DeploymentType.MERGED);
            NacosStartUpManager.start(NacosStartUp.CORE_START_UP_PHASE);
            ConfigurableApplicationContext core = new SpringApplicationBuilder(NacosServerBasicApplication.class)
                    .web(WebApplicationType.NONE).bannerMode(Banner.Mode.OFF).run(args);
            NacosStartUpManager.start(NacosStartUp.WEB_START_UP_PHASE);
            new SpringApplicationBuilder(NacosServerWebApplication.class).parent(core)
                    .bannerMode(Banner.Mode.OFF).run(args);
            NacosStartUpManager.start(NacosStartUp.CONSOLE_START_UP_PHASE);
            new SpringApplicationBuilder(NacosConsole.class).parent(core)
                    .bannerMode(Banner.Mode.OFF).run(args);
            System.out.println("NacosLauncher: server and console started");
        } catch (Throwable t) {
            System.err.println("NacosLauncher: start-up failed: " + t);
            t.printStackTrace();
            System.exit(1);
        }
    }
}
